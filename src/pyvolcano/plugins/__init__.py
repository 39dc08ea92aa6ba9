"""Built-in plugins; each module registers one with ``@register_plugin`` (modules starting with ``_`` are
helpers)."""
