"""Fusion Explorer web app: the Django project and its single app."""
