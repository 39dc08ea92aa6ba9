"""volcano-scheduler.conf: loading, validation, defaults."""

from pyvolcano.conf.loader import DEFAULT_CONF, PluginOption, SchedulerConf, Tier, load_conf, load_conf_file

__all__ = ["DEFAULT_CONF", "PluginOption", "SchedulerConf", "Tier", "load_conf", "load_conf_file"]
