"""The built-in model kinds (``experiments.kinds.registry``), one module a family:
``linear`` (Baykal et al.'s regression models), ``lsh_table`` (Theorem 4.1's learner) and
``routers`` (the ``routing.layers`` layers trained end to end). Each module registers its
kinds on import; nothing here imports torch until a model is built."""

# In this order, whichever of them is imported first: the registry lists kinds in the order
# they were registered.
from experiments.kinds import linear, lsh_table, routers  # noqa: E402,F401
