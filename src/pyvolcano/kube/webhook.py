"""``pyvolcano webhook``: Volcano's admission webhooks (``vc-webhook-manager``) over TLS.

An ``admission.k8s.io/v1`` AdmissionReview comes in on one of Volcano's paths (``pkg/webhooks/router``), an
AdmissionReview goes out: ``allowed`` with Volcano's message when refused, a JSON patch for the mutating paths.
The rules are the project's one rule set: ``api/job_validate.py`` (``kube/validation.validate_job`` on create,
``job_update_problems`` on update) for Jobs, with ``api/admission.job_create_problems`` for the rules Volcano
checks only at admission; ``kube/validation.validate_queue``/``validate_queue_tree`` for Queues, with
``api/admission.validate_queue_change``/``validate_queue_delete`` (``QueueRules``: Volcano's queue flags);
``api/admission.py`` for the other kinds and every mutating default.  A body that is not an
AdmissionReview is answered with ``allowed: false`` and the reason (Volcano's ``serve``:
``ToAdmissionResponse(err)``), and any error inside a rule refuses the request with its message: the server never
dies on a request.

The webhook configurations (:func:`webhook_configurations`) follow Volcano's chart
(``installer/helm/chart/volcano/templates/webhooks.yaml``): ``failurePolicy: Fail``, ``timeoutSeconds: 10``,
volcano-system and kube-system excluded by a namespace selector; ``pyvolcano install`` ships them with a
``service`` client config, ``--register`` points them at a ``url`` (outside the cluster) or the Service, with the
CA bundle of the serving certificate.
"""

from __future__ import annotations

import base64
import json
import logging
import shutil
import ssl
import subprocess
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from pyvolcano.api import admission
from pyvolcano.errors import UserError

log = logging.getLogger(__name__)

#: Volcano's ``MaxRequestBody`` (``pkg/webhooks/router/server.go``): 3 MiB
MAX_BODY = 3 * 1024 * 1024
CONFIG_PREFIX = "volcano-admission-service"


@dataclass(frozen=True)
class Hook:
    """One admission path: Volcano's webhook name, the resource it watches and the operations."""

    path: str
    name: str
    group: str
    version: str
    plural: str
    operations: tuple[str, ...]
    namespaced: bool = True

    @property
    def mutating(self) -> bool:
        return self.path.endswith("/mutate")


#: Volcano's admission services (``pkg/webhooks/admission/*/``: each ``service`` with its Path and Rules)
HOOKS: tuple[Hook, ...] = (
    Hook("/jobs/mutate", "mutatejob.volcano.sh", "batch.volcano.sh", "v1alpha1", "jobs", ("CREATE",)),
    Hook("/jobs/validate", "validatejob.volcano.sh", "batch.volcano.sh", "v1alpha1", "jobs", ("CREATE", "UPDATE")),
    Hook("/queues/mutate", "mutatequeue.volcano.sh", "scheduling.volcano.sh", "v1beta1", "queues", ("CREATE",),
         namespaced=False),
    Hook("/queues/validate", "validatequeue.volcano.sh", "scheduling.volcano.sh", "v1beta1", "queues",
         ("CREATE", "UPDATE", "DELETE"), namespaced=False),
    Hook("/podgroups/mutate", "mutatepodgroup.volcano.sh", "scheduling.volcano.sh", "v1beta1", "podgroups",
         ("CREATE",)),
    Hook("/podgroups/validate", "validatepodgroup.volcano.sh", "scheduling.volcano.sh", "v1beta1", "podgroups",
         ("CREATE",)),
    Hook("/pods/validate", "validatepod.volcano.sh", "", "v1", "pods", ("CREATE",)),
    Hook("/hypernodes/validate", "validatehypernodes.volcano.sh", "topology.volcano.sh", "v1alpha1", "hypernodes",
         ("CREATE", "UPDATE"), namespaced=False),
    Hook("/cronjobs/validate", "validatecronjob.volcano.sh", "batch.volcano.sh", "v1alpha1", "cronjobs",
         ("CREATE", "UPDATE")),
    Hook("/jobflows/validate", "validatejobflow.volcano.sh", "flow.volcano.sh", "v1alpha1", "jobflows",
         ("CREATE", "UPDATE")),
)
PATHS = {h.path: h for h in HOOKS}


def config_name(hook: Hook) -> str:
    """``volcano-admission-service-jobs-mutate`` and so on, as Volcano's chart names them."""
    return f"{CONFIG_PREFIX}-{hook.path.strip('/').replace('/', '-')}"


def webhook_configurations(client_config: Callable[[Hook], dict[str, Any]], namespace: str = "volcano-system",
                           paths: list[str] | None = None) -> list[dict[str, Any]]:
    """One Mutating/ValidatingWebhookConfiguration per path, as Volcano's chart: ``failurePolicy: Fail``,
    ``timeoutSeconds: 10``, ``matchPolicy: Equivalent``; namespaced kinds skip ``namespace`` and kube-system."""
    out = []
    for hook in HOOKS:
        if paths is not None and hook.path not in paths:
            continue
        wh: dict[str, Any] = {
            "name": hook.name, "admissionReviewVersions": ["v1"], "clientConfig": client_config(hook),
            "failurePolicy": "Fail", "matchPolicy": "Equivalent", "timeoutSeconds": 10,
            "sideEffects": "NoneOnDryRun" if hook.mutating else "None",
            "rules": [{"apiGroups": [hook.group], "apiVersions": [hook.version], "operations": list(hook.operations),
                       "resources": [hook.plural], "scope": "*"}],
        }
        if hook.namespaced:
            wh["namespaceSelector"] = {"matchExpressions": [{"key": "kubernetes.io/metadata.name",
                                                             "operator": "NotIn",
                                                             "values": [namespace, "kube-system"]}]}
        if hook.mutating:
            wh["reinvocationPolicy"] = "Never"
        kind = "MutatingWebhookConfiguration" if hook.mutating else "ValidatingWebhookConfiguration"
        out.append({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                    "metadata": {"name": config_name(hook)}, "webhooks": [wh]})
    return out


def service_client_config(namespace: str, name: str, ca_bundle: str = "") -> Callable[[Hook], dict[str, Any]]:
    def cc(hook: Hook) -> dict[str, Any]:
        out: dict[str, Any] = {"service": {"namespace": namespace, "name": name, "path": hook.path, "port": 443}}
        if ca_bundle:
            out["caBundle"] = ca_bundle
        return out
    return cc


def url_client_config(base_url: str, ca_bundle: str) -> Callable[[Hook], dict[str, Any]]:
    return lambda hook: {"url": base_url.rstrip("/") + hook.path, "caBundle": ca_bundle}


# --- the rules behind each path ------------------------------------------------------------------------------------
class Cluster:
    """What the rules look up: the queues, a namespace's annotations, the job plugins there are.  The default is
    empty (tests, a webhook without an API server); ``KubeLookups`` reads a cluster."""

    def queues(self) -> Mapping[str, Mapping[str, Any]]:
        return {}

    def namespace_annotations(self, namespace: str) -> Mapping[str, str] | None:
        return None


class KubeLookups(Cluster):
    """The queues from an informer (kept current by watch), namespaces read when a PodGroup needs one."""

    def __init__(self, api: Any) -> None:
        from pyvolcano.kube.reflector import Reflector
        from pyvolcano.kube.resources import QUEUE

        self.api = api
        self.reflector = Reflector(api, QUEUE, lambda typ, obj: None)

    def start(self, timeout: float = 30.0) -> bool:
        self.reflector.start()
        return self.reflector.synced.wait(timeout)

    def stop(self) -> None:
        self.reflector.stop()

    def queues(self) -> Mapping[str, Mapping[str, Any]]:
        return {q["metadata"]["name"]: q for q in list(self.reflector.store.values())}

    def namespace_annotations(self, namespace: str) -> Mapping[str, str] | None:
        from pyvolcano.kube.client import ApiError
        from pyvolcano.kube.resources import NAMESPACE

        try:
            return (self.api.get(NAMESPACE, namespace).get("metadata") or {}).get("annotations") or {}
        except ApiError as exc:  # Volcano logs and admits unchanged
            log.warning("namespace %s: %s", namespace, exc)
            return None


class Rejected(Exception):
    """A request refused with Volcano's message."""


class Admission:
    """Answers AdmissionReviews with the project's rules (no I/O but ``cluster``'s look-ups)."""

    def __init__(self, cluster: Cluster | None = None, scheduler_names: tuple[str, ...] = ("volcano",),
                 queue_rules: admission.QueueRules | None = None) -> None:
        self.cluster = cluster or Cluster()
        self.scheduler_names = scheduler_names
        self.queue_rules = queue_rules or admission.QueueRules()

    def review(self, path: str, body: bytes) -> dict[str, Any]:
        """The AdmissionReview answering ``body`` on ``path``; never raises."""
        uid = ""
        try:
            try:
                ar = json.loads(body)
            except (ValueError, UnicodeDecodeError) as exc:
                raise Rejected(f"couldn't get version/kind; json parse error: {exc}") from None
            if not isinstance(ar, dict) or ar.get("kind") != "AdmissionReview" or \
                    ar.get("apiVersion") not in ("admission.k8s.io/v1", "admission.k8s.io/v1beta1"):
                raise Rejected("request body is not an admission.k8s.io/v1 AdmissionReview")
            req = ar.get("request")
            if not isinstance(req, dict) or not req.get("uid"):
                raise Rejected("AdmissionReview has no request (or the request has no uid)")
            uid = str(req["uid"])
            resp = self._admit(path, req)
        except Rejected as exc:
            resp = {"allowed": False, "status": {"message": str(exc)}}
        except Exception as exc:  # a rule that breaks on odd input refuses; the server stays up
            log.exception("admission %s failed", path)
            resp = {"allowed": False, "status": {"message": f"internal error: {type(exc).__name__}: {exc}"}}
        resp["uid"] = uid
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": resp}

    def _admit(self, path: str, req: dict[str, Any]) -> dict[str, Any]:
        hook = PATHS.get(path)
        if hook is None:
            raise Rejected(f"no admission webhook at {path!r} (known: {', '.join(sorted(PATHS))})")
        op = str(req.get("operation") or "")
        if op not in hook.operations:
            raise Rejected(f"invalid operation `{op}`, expect operation to be "
                           + " or ".join(f"`{o}`" for o in hook.operations))
        obj = req.get("oldObject") if op == "DELETE" else req.get("object")
        if not isinstance(obj, dict):
            raise Rejected(f"the {op} request for {hook.plural} carries no object")
        md = obj.setdefault("metadata", {})
        if not isinstance(md, dict):
            raise Rejected("metadata must be a mapping")
        if hook.namespaced and not md.get("namespace"):
            md["namespace"] = req.get("namespace") or "default"
        if hook.mutating:
            patch = self._mutate(hook, obj)
            out: dict[str, Any] = {"allowed": True}
            if patch:
                out["patchType"] = "JSONPatch"
                out["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
            return out
        msg = self._validate(hook, op, obj, req)
        return {"allowed": False, "status": {"message": msg}} if msg else {"allowed": True}

    def _mutate(self, hook: Hook, obj: dict[str, Any]) -> list[dict[str, Any]]:
        if hook.plural == "jobs":
            return admission.mutate_job(obj, self.scheduler_names[0])
        if hook.plural == "queues":
            return admission.mutate_queue(obj)
        if hook.plural == "podgroups":
            return admission.mutate_podgroup(obj, self.cluster.namespace_annotations(obj["metadata"]["namespace"]))
        raise Rejected(f"no mutating rules for {hook.plural}")

    def _validate(self, hook: Hook, op: str, obj: dict[str, Any], req: dict[str, Any]) -> str:
        from pyvolcano.api.job_validate import job_update_problems
        from pyvolcano.kube import job_plugins
        from pyvolcano.kube.validation import validate_job, validate_queue, validate_queue_tree

        if hook.plural == "jobs":
            if op == "UPDATE":  # Volcano's validateJobUpdate, the rule the job controller applies too
                old = req.get("oldObject")
                if not isinstance(old, dict):
                    raise Rejected("the UPDATE request for jobs carries no oldObject")
                return "; ".join(str(p) for p in job_update_problems(old, obj))
            queues = self.cluster.queues()
            return "; ".join(validate_job(obj, queues, job_plugins.SUPPORTED)
                             + admission.job_create_problems(obj, queues))
        if hook.plural == "queues":
            queues = dict(self.cluster.queues())
            name = str(obj["metadata"].get("name") or "")
            if op == "DELETE":
                return admission.validate_queue_delete(name, queues, obj, self.queue_rules)
            old = req.get("oldObject") if op == "UPDATE" else None
            if op == "UPDATE" and not isinstance(old, dict):
                raise Rejected("the UPDATE request for queues carries no oldObject")
            queues[name] = obj
            errs = validate_queue(obj, queues)
            if errs:
                return "; ".join(errs)
            msg, tree = admission.validate_queue_change(op, obj, old, queues, self.queue_rules)
            return msg or ("; ".join(validate_queue_tree(name, queues)) if tree else "")
        if hook.plural == "podgroups":
            return admission.validate_podgroup(obj, self.cluster.queues())
        if hook.plural == "pods":
            return admission.validate_pod(obj, self.scheduler_names)
        kind = {"hypernodes": "HyperNode", "cronjobs": "CronJob", "jobflows": "JobFlow"}[hook.plural]
        return admission.SIMPLE_VALIDATORS[kind](obj)


# --- TLS ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Certs:
    cert: Path
    key: Path
    ca: Path

    def ca_bundle(self) -> str:
        return base64.b64encode(self.ca.read_bytes()).decode()


def make_certs(directory: Path, hosts: list[str]) -> Certs:
    """A CA and a serving certificate for ``hosts`` (IP addresses or DNS names, as subjectAltNames) in
    ``directory``: made with the ``cryptography`` package (a dependency), or the ``openssl`` command where that
    package cannot be imported."""
    directory.mkdir(parents=True, exist_ok=True)
    try:
        import cryptography  # noqa: F401
    except ImportError:
        return _openssl_certs(directory, hosts)
    return _cryptography_certs(directory, hosts)


def _is_ip(host: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _cryptography_certs(directory: Path, hosts: list[str]) -> Certs:
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    life = datetime.timedelta(days=3650)

    def pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
        return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pyvolcano-webhook-ca")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + life).add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address(h)) if _is_ip(h) else x509.DNSName(h)
                                    for h in hosts]
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + life)
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    out = Certs(directory / "tls.crt", directory / "tls.key", directory / "ca.crt")
    out.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    out.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    out.key.write_bytes(pem_key(key))
    out.key.chmod(0o600)
    return out


def _openssl_certs(directory: Path, hosts: list[str]) -> Certs:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise UserError("webhook: no serving certificate given (--tls-cert-file), and neither the cryptography "
                        "package nor the `openssl` command to make one")
    ca_key, ca, key, csr, cert = (directory / n for n in ("ca.key", "ca.crt", "tls.key", "tls.csr", "tls.crt"))
    san = ",".join(f"IP:{h}" if _is_ip(h) else f"DNS:{h}" for h in hosts)
    ext = directory / "san.cnf"
    ext.write_text(f"subjectAltName={san}\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    steps = [
        [openssl, "req", "-x509", *ec, "-keyout", str(ca_key), "-out", str(ca), "-days", "3650",
         "-subj", "/CN=pyvolcano-webhook-ca"],
        [openssl, "req", *ec, "-keyout", str(key), "-out", str(csr), "-subj", f"/CN={hosts[0]}"],
        [openssl, "x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial",
         "-out", str(cert), "-days", "3650", "-extfile", str(ext)],
    ]
    for cmd in steps:
        p = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if p.returncode != 0:
            raise UserError(f"webhook: openssl {cmd[1]} failed: {p.stderr.strip()[-500:]}")
    return Certs(cert, key, ca)


class _Handler(BaseHTTPRequestHandler):
    admission: Admission
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    def _send(self, code: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path in ("/healthz", "/readyz"):
            self._send(200, b"ok", "text/plain")
        else:
            self._send(404, b"not found", "text/plain")

    def do_POST(self) -> None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY:
            self._send(413, b"request body too large", "text/plain")
            return
        body = self.rfile.read(length)
        if (self.headers.get("Content-Type") or "").split(";")[0].strip() != "application/json":
            self._send(415, b"contentType is not application/json", "text/plain")
            return
        path = self.path.split("?", 1)[0]
        self._send(200, json.dumps(self.admission.review(path, body)).encode())


class _TLSServer(ThreadingHTTPServer):
    """The TLS handshake happens in each connection's own thread (with a timeout), so a client that connects and
    stalls never holds up the accepting loop; a failed handshake is logged, not printed as a traceback."""

    daemon_threads = True
    tls: ssl.SSLContext

    def finish_request(self, request: Any, client_address: Any) -> None:
        request.settimeout(10.0)
        with self.tls.wrap_socket(request, server_side=True) as conn:
            super().finish_request(conn, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("connection from %s failed", client_address, exc_info=True)


class WebhookServer:
    """The admission paths over HTTPS, one thread per connection."""

    def __init__(self, admission_: Admission, host: str, port: int, certs: Certs) -> None:
        handler = type("Handler", (_Handler,), {"admission": admission_})
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(str(certs.cert), str(certs.key))
        self.httpd = _TLSServer((host, port), handler)
        self.httpd.tls = ctx
        self._t = threading.Thread(target=self.httpd.serve_forever, name="webhook", daemon=True)

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    def start(self) -> WebhookServer:
        self._t.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def register(api: Any, configs: list[dict[str, Any]]) -> None:
    """Apply the webhook configurations (server-side apply: re-registering replaces the CA bundle and URL)."""
    from pyvolcano.kube.client import ApiError
    from pyvolcano.kube.resources import for_object

    for obj in configs:
        try:
            api.apply(for_object(obj), obj)
        except ApiError as exc:
            raise UserError(f"webhook: cannot register {obj['kind']} {obj['metadata']['name']}: {exc}") from None


def unregister(api: Any, paths: list[str] | None = None) -> None:
    from pyvolcano.kube.client import ApiError
    from pyvolcano.kube.resources import MUTATINGWEBHOOK, VALIDATINGWEBHOOK

    for hook in HOOKS:
        if paths is not None and hook.path not in paths:
            continue
        try:
            api.delete(MUTATINGWEBHOOK if hook.mutating else VALIDATINGWEBHOOK, config_name(hook))
        except ApiError as exc:
            if not exc.not_found:
                raise
