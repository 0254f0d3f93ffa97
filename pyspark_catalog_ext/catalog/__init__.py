"""Catalog access: the one REST client (PyIceberg's RestCatalog) and the vendor profiles."""
