"""Routing functions of sparse networks: LSH families, hash tables, Top-K and bucket geometry.

Source: Baykal et al. 2022, §2.2 (LSH model, Euclidean LSH) and Lemma 4.2 (bucket geometry).
"""
