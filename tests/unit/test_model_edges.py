"""The model layer at its edges: instance type names, label namespaces, pins per minor and the
driver branch boundary."""

import dataclasses

import pytest

from gpu_pool.model import catalog
from gpu_pool.model.catalog import CatalogError, split_instance_type
from gpu_pool.model.labels import label_namespace
from gpu_pool.model.versions import autoscaler_image_tag


@pytest.mark.parametrize("name", ["g5", "g5.", ".xlarge", "g5.x.large"])
def test_an_instance_type_name_is_one_family_and_one_size(name):
    with pytest.raises(CatalogError) as err:
        split_instance_type(name)
    assert str(err.value) == f"'{name}' is not an EC2 instance type name (expected family.size)"


def test_a_family_and_a_size_split_at_the_dot():
    assert split_instance_type("p6-b200.48xlarge") == ("p6-b200", "48xlarge")


@pytest.mark.parametrize(
    ("key", "namespace"),
    [("nvidia.com/gpu.present", "nvidia.com"), ("a.io/b/c", "a.io"), ("workload", "")],
)
def test_a_label_namespace_is_what_comes_before_the_first_slash(key, namespace):
    assert label_namespace(key) == namespace


def test_a_minor_without_a_pinned_autoscaler_has_no_image_tag():
    assert autoscaler_image_tag("1.99") is None


def test_a_family_needing_exactly_the_amis_driver_branch_resolves(monkeypatch):
    g6 = catalog.GPU_FAMILIES["g6"]
    at_branch = dataclasses.replace(g6, min_driver=catalog.AMI_DRIVER_BRANCH)
    monkeypatch.setitem(catalog.GPU_FAMILIES, "g6", at_branch)
    assert catalog.lookup("g6.xlarge").family is at_branch
