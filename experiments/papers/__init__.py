"""One module per paper experiment: its configs at each preset and its claims (Baykal et al.
2022 Figs. 2–4, Tables 1–2, the subspace sweep, the routers, COMET's studies, SDM's curves, and the
real-data experiments: CIFAR-10, continual learning, COMET's image MLPs)."""
