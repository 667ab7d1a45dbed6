"""Channel adapters: the protocol (:mod:`.base`) and the ``workflow`` adapter
(:mod:`.workflow`); import from those modules."""
