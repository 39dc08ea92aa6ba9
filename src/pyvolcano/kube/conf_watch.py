"""The scheduler conf file, watched for changes (Volcano's scheduler watches its conf file with fsnotify and
reloads it before the next session: ``pkg/scheduler/scheduler.go``, ``watchSchedulerConf``/``loadSchedulerConf``)."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

from pyvolcano.conf.loader import SchedulerConf, load_conf, load_conf_file
from pyvolcano.errors import ConfigError

log = logging.getLogger(__name__)


class ConfFile:
    """The scheduler conf file, re-read when its content changes (a ConfigMap update swaps a symlink, so the
    content, not the mtime of one path, is what is compared).  A broken new version is reported once and the
    last good conf stays in force."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.conf: SchedulerConf = load_conf_file(path)
        self._digest = self._read_digest()[1] if path else ""
        self._bad = ""
        self.reloads = 0
        #: the conf in force before the last reload, and the digest of that reload (``reject``)
        self._previous: tuple[SchedulerConf, str] | None = None
        self._told = ""

    def _read_digest(self) -> tuple[str, str]:
        text = Path(self.path).read_text() if self.path else ""
        return text, hashlib.sha256(text.encode()).hexdigest()

    def poll(self) -> bool:
        """True when a changed, valid conf was loaded."""
        if not self.path:
            return False
        try:
            text, digest = self._read_digest()
        except OSError as exc:
            if self._bad != str(exc):
                self._bad = str(exc)
                log.error("cannot read scheduler conf %s: %s; keeping the previous conf", self.path, exc)
            return False
        if digest == self._digest or digest == self._bad:
            return False
        try:
            conf = load_conf(text, self.path)
        except ConfigError as exc:
            self._bad = digest
            log.error("scheduler conf %s changed but is invalid, keeping the previous conf: %s", self.path, exc)
            return False
        self._previous = (self.conf, self._digest)
        self.conf, self._digest, self._bad = conf, digest, ""
        self.reloads += 1
        log.info("scheduler conf %s reloaded: actions %s", self.path, ", ".join(conf.actions))
        return True

    def reject(self, exc: ConfigError) -> None:
        """A session could not open under the conf (a plugin argument read when the plugin opens, e.g. a usage
        threshold that is no integer): a reloaded conf is dropped for the one before it, as a conf that does not
        load is; the first conf has none before it, so the error is logged once and sessions keep failing until the
        file is fixed."""
        if self._previous is not None:
            bad = self._digest
            self.conf, self._digest = self._previous
            self._previous, self._bad = None, bad
            log.error("scheduler conf %s changed but is invalid, keeping the previous conf: %s", self.path, exc)
        elif str(exc) != self._told:
            self._told = str(exc)
            log.error("scheduler conf %s is invalid, nothing is scheduled until it is fixed: %s", self.path, exc)
