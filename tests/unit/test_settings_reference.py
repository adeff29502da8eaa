"""docs/settings.md's settings reference is what the models say (generated, never hand-edited)."""

import json

from gpu_pool.settings import CONTEXT_KEY, load_settings
from gpu_pool.settings.reference import END, START, settings_models, settings_reference
from tests.support.paths import ROOT

APP_CONTEXT = json.loads((ROOT / "cdk.json").read_text(encoding="utf-8"))["context"][CONTEXT_KEY]


def test_the_docs_hold_the_reference_generated_from_the_models():
    page = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    documented = page.partition(START)[2].partition(END)[0].strip()
    assert documented == settings_reference(APP_CONTEXT).strip(), (
        "docs/settings.md is out of date: run `python tools/settings_reference.py`"
    )


def test_every_setting_has_a_description():
    undocumented = [
        f"{model.__name__}.{name}"
        for model in settings_models()
        for name, info in model.model_fields.items()
        if not (info.description or "").strip()
    ]
    assert undocumented == []


def test_the_reference_names_each_key_with_its_default():
    reference = settings_reference()
    assert "| `max_size` | number | `8` | Most nodes per node group" in reference
    assert "### `pool`, `pools.<name>` (PoolSettings)" in reference
    assert "| `kubectl_provider_role_arn` | text | none |" in reference


def test_the_kubernetes_version_default_is_the_one_the_app_deploys():
    """The app's cdk.json pins the cluster's minor; the page gives that, and the model's own."""
    deployed = load_settings(APP_CONTEXT, None).cluster.kubernetes_version
    model_default = load_settings({}, None).cluster.kubernetes_version
    page = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    (row,) = [line for line in page.splitlines() if line.startswith("| `kubernetes_version` |")]
    assert row.split(" | ")[2] == (
        f"`{deployed}` in the app's cdk.json (`{model_default}` without it)"
        if deployed != model_default
        else f"`{model_default}`"
    )
