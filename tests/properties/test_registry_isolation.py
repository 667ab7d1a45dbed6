"""The property tests' custom names stay theirs: `test_one_meaning` registers `urgent`,
`over` and `pick` on the process-wide registry for its own tests only (a module fixture),
so a test elsewhere in the same session, before or after it, never sees them."""

from __future__ import annotations

from flowc.compiler.registry import default_registry


def test_no_custom_name_of_the_property_tests_is_registered_here() -> None:
    registry = default_registry()
    assert not {"urgent", "over"} & set(registry.condition_names)
    assert "pick" not in registry.target_names
