"""The `.flow` language server (`flowc lsp`): :mod:`flowc.lsp.server` speaks the protocol,
:mod:`flowc.lsp.index` knows what each name in a document refers to."""
