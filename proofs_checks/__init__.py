"""Executable checks of the theorems and lemmas of Baykal et al. 2022 (§3–§4)."""
