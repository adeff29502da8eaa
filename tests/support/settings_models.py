"""Walking the settings models."""

from typing import get_args

from pydantic import BaseModel


def all_models(root: type[BaseModel]) -> list[type[BaseModel]]:
    """`root` and every settings model its fields reach."""
    found: list[type[BaseModel]] = []
    todo = [root]
    while todo:
        model = todo.pop()
        if model in found:
            continue
        found.append(model)
        for info in model.model_fields.values():
            stack = [info.annotation]
            while stack:
                annotation = stack.pop()
                if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                    todo.append(annotation)
                stack.extend(get_args(annotation))
    return found
