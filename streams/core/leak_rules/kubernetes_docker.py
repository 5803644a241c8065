"""Container credentials: Kubernetes Secret manifests, docker config auth, registry logins.

Each rule is data: its pattern, trigger, shape, and its own examples and near misses."""

from __future__ import annotations

import base64
import re
from typing import Final

from streams.core.leak_rules.filters import is_placeholder, looks_fake
from streams.core.leak_rules.pieces import B62, HEX, LOWER, b64, fake, reject_pair_secret
from streams.core.leak_rules.rule import LeakRule

__all__ = ["CONTEXT", "KEYED", "SPECIFIC", "TOKENS"]


def _reject_docker_auth(secret: str, _before: str, _after: str) -> bool:
    """A docker config `auth` is base64 of `user:password`; anything else is not one."""
    raw = b64(secret)
    return raw is None or b":" not in raw or is_placeholder(secret)


def _kubernetes_values(secret: str) -> list[tuple[int, int]]:
    """The values of a Secret's `data:`/`stringData:` block: `key: value` per line at the first
    key's indentation, and the deeper lines of a block scalar (`key: |`). Comment lines are
    skipped; a line indented less than the keys ends the block; placeholders stay."""
    spans: list[tuple[int, int]] = []
    key_indent = -1
    in_scalar = False
    pos = 0
    for line in secret.splitlines(keepends=True):
        start, pos = pos, pos + len(line)
        body = line.lstrip(" \t")
        content = body.rstrip("\r\n").rstrip(" \t")
        if not content or content.startswith("#"):
            continue
        indent = len(line) - len(body)
        key_indent = indent if key_indent < 0 else key_indent
        if indent < key_indent:
            break
        if indent > key_indent:
            if in_scalar:
                spans.append((start + indent, start + indent + len(content)))
            continue
        m = _K8S_ENTRY.fullmatch(content)
        if m is None:
            break
        value = m.group(1)
        in_scalar = value == "" or _BLOCK_SCALAR.fullmatch(value) is not None
        bare = value.strip("\"'")
        if not in_scalar and bare and not is_placeholder(bare):
            first = start + indent + m.start(1) + value.index(bare)
            spans.append((first, first + len(bare)))
    return spans


_K8S_ENTRY = re.compile(r"[A-Za-z0-9_.-]{1,253}:[ \t]*(.{0,4096})")

_BLOCK_SCALAR = re.compile(r"[|>][-+]?[0-9]?")


def _reject_kubernetes(secret: str, before: str, after: str) -> bool:
    """`kind: Secret` and `data:` in two YAML documents (split by `---`) belong to neither."""
    return "\n---" in before or "\n---" in after or "\n---" in secret


# Formats that are more than a prefix and runs: listed first, they name a span they share.
def reject_bootstrap_token(secret: str, _before: str, _after: str) -> bool:
    """The documented example token (`abcdef.0123456789abcdef`) and stand-ins are no token."""
    token_id, _, token_secret = secret.partition(".")
    return (
        is_placeholder(secret)
        or looks_fake(token_secret)
        or token_id == "abcdef"
        or "0123456789" in token_secret
        or not any(c.isdigit() for c in secret)
    )


SPECIFIC: Final[tuple[LeakRule, ...]] = (
    # Kubernetes Secret manifests: the values under `data:` (base64) and `stringData:` (plain)
    # of a `kind: Secret`; the keys and the rest of the manifest stay readable.
    # https://kubernetes.io/docs/concepts/configuration/secret/
    LeakRule(
        "kubernetes-secret-data",
        r"(?i:kind:[ \t]*[\"']?Secret[\"']?)[ \t]*\r?\n(?:[^\x00]{0,400}?\n)?"
        r"[ \t]*(?:data|stringData):[ \t]*\r?\n"
        r"(?P<secret>(?:[ \t]+[^\r\n]*(?:\r?\n|$)|[ \t]*#[^\r\n]*(?:\r?\n|$))+)"
        # The same with `kind: Secret` after the data (keys in another order).
        r"|(?:\n|^)[ \t]*(?:data|stringData):[ \t]*\r?\n"
        r"(?P<secret2>(?:[ \t]+[^\r\n]*\r?\n|[ \t]*#[^\r\n]*\r?\n)+)"
        r"[^\x00]{0,400}?(?i:kind:[ \t]*[\"']?Secret[\"']?)[ \t]*(?:\r?\n|$)",
        r"(?i:kind:[ \t]*[\"']?Secret)",
        _reject_kubernetes,
        family="kubernetes-docker",
        examples=(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: Opaque\ndata:\n"
            f"  password: {base64.b64encode(fake(B62, 18, 'k1').encode()).decode()}\n",
            f"kind: Secret\nmetadata:\n  name: api\nstringData:\n  token: {fake(B62, 30, 'k2')}\n",
            "apiVersion: v1\ndata:\n  # the registry login\n  .dockerconfigjson: |\n    "
            + base64.b64encode(fake(B62, 40, "k3").encode()).decode()
            + "\nkind: Secret\ntype: kubernetes.io/dockerconfigjson\n",
        ),
        near_misses=(
            "kind: Deployment\nspec:\n  env:\n    - name: API_KEY\n      valueFrom:\n"
            "        secretKeyRef:\n          name: api\n          key: api-key\n",
            "kind: ConfigMap\ndata:\n  LOG_LEVEL: debug\n",
            "kind: Secret\nmetadata:\n  name: app\n---\nkind: ConfigMap\ndata:\n  mode: fast\n",
            "kind: Secret\ntype: Opaque\ndata:\n  password: {{ .Values.dbPassword }}\n",
            "spec:\n  secretStoreRef:\n    kind: SecretStore\n  data:\n    - secretKey: api-key\n",
        ),
        shape="`kind: Secret` ... `data:` / `stringData:` values",
        parts=_kubernetes_values,
    ),
    # Docker client config (~/.docker/config.json): "auths": {"<registry>": {"auth": base64 of
    # user:password}}. https://docs.docker.com/reference/cli/docker/login/
    LeakRule(
        "docker-config-auth",
        r"\\?\"auth\\?\"[ \t]{0,4}:[ \t]{0,4}\\?\"(?P<secret>[A-Za-z0-9+/]{8,}={0,2})\\?\"",
        r"\"auth\\?\"",
        _reject_docker_auth,
        family="kubernetes-docker",
        context=True,
        examples=(
            '{"auths": {"registry.example.com": {"auth": "'
            + base64.b64encode(f"ci:{fake(B62, 20, 'dk1')}".encode()).decode()
            + '"}}}',
            '"auth": "' + base64.b64encode(f"bot:{fake(B62, 32, 'dk2')}".encode()).decode() + '"',
        ),
        near_misses=('"auth": "required"', '{"auth": "bearer"}'),
        shape='`"auth": "` + base64(user:password)',
    ),
    # A registry password on a container tool's command line (`docker login -p`, podman, nerdctl,
    # buildah, skopeo, oras, `helm registry login`, `crane auth login`), quoted or not; the
    # documented `--password-stdin` takes none. https://docs.docker.com/reference/cli/docker/login/
    LeakRule(
        "docker-login-password",
        r"\b(?:docker|podman|nerdctl|buildah|skopeo|oras|helm[ \t]+registry|crane[ \t]+auth)"
        r"[ \t]+login\b[^\r\n|;&]{0,300}?[ \t](?:-p|--password)(?:[ \t]{1,4}|=)(?:"
        r"\"(?P<secret>[^\"\\\r\n]{1,256})\"|'(?P<secret2>[^'\\\r\n]{1,256})'"
        r"|(?P<secret3>[^\s\"'\\<>|;&]{1,256}))",
        r"(?:docker|podman|nerdctl|buildah|skopeo|oras|registry|auth)[ \t]+login",
        reject_pair_secret,
        family="kubernetes-docker",
        context=True,
        examples=(
            f"docker login -u deploy -p {fake(B62, 20, 'dl1')} registry.example.com",
            f"podman login --username ci --password '{fake(B62, 24, 'dl2')}' quay.io",
            f"helm registry login ghcr.io -u bot --password={fake(B62, 18, 'dl3')}",
        ),
        near_misses=(
            "echo $CR_PAT | docker login ghcr.io -u USERNAME --password-stdin",
            "docker login -u deploy -p $REGISTRY_PASSWORD registry.example.com",
            "docker login -u user -p password registry.example.com",
            "docker run -p 8080:80 nginx && docker login ghcr.io",
        ),
        shape="`docker login ... -p` / `--password` + password",
    ),
    # Kubernetes bootstrap tokens (`kubeadm join --token <6>.<16>`): whoever has one joins a
    # node to the cluster. The docs' `abcdef.0123456789abcdef` stays.
    # https://kubernetes.io/docs/reference/access-authn-authz/bootstrap-tokens/
    LeakRule(
        "kubernetes-bootstrap-token",
        r"(?i:token)[\"']?[ \t]{0,4}[:= ][ \t]{0,4}[\"']?(?P<secret>[a-z0-9]{6}\.[a-z0-9]{16})"
        r"(?:[^A-Za-z0-9_.-]|$)",
        r"(?i:token)[\"']?[ \t]*[:= ][ \t]*[\"']?"
        r"[a-z0-9][a-z0-9][a-z0-9][a-z0-9][a-z0-9][a-z0-9]\.[a-z0-9]",
        reject_bootstrap_token,
        family="kubernetes-docker",
        examples=(
            f"kubeadm join 10.0.0.10:6443 --token {fake(LOWER, 6, 'kb1')}.{fake(LOWER, 16, 'kb2')}"
            " --discovery-token-ca-cert-hash sha256:" + fake(HEX, 64, "kb3"),
            f'token: "{fake(LOWER, 6, "kb4")}.{fake(LOWER, 16, "kb5")}"',
        ),
        near_misses=(
            "kubeadm join 10.0.0.10:6443 --token abcdef.0123456789abcdef",
            "token: example.com.internal",
        ),
        shape="`--token ` + 6 + `.` + 16 (lower)",
    ),
)

TOKENS: Final[tuple[LeakRule, ...]] = ()

KEYED: Final[tuple[LeakRule, ...]] = ()

CONTEXT: Final[tuple[LeakRule, ...]] = ()
