"""The neural encoders: the MiniLM bi-encoder, the cross-encoders, their traced (TorchScript)
forms, and where the base models come from (PyPI packages, never a hub)."""
