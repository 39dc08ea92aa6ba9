"""Built-in actions; each module registers one with ``@register_action``."""
