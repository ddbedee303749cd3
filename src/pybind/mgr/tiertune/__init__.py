from .module import Module

__all__ = ['Module']
