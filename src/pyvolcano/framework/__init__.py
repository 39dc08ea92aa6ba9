"""Session, Statement, extension points and the plugin/action registries (Volcano's pkg/scheduler/framework)."""
