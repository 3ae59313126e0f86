"""Which prompt layouts are there? Their names, importable without DSPy (the spec checks ``--prompt-layout``).

What each one lays out where: :mod:`courtroom.models._layout`.
"""

LAYOUTS = ("classic", "cache", "auto")
