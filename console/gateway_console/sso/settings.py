"""Single sign-on's settings: ``[plugins.console.sso]`` of ``plugins.toml``, under
the environment's ``RELAYGATE_SSO_<KEY>`` (the key in capitals), as every other
setting (``docs/configuration.md#single-sign-on``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from gateway_core.admin.sso_users import SignUp
from gateway_core.config import ConfigError

from ..plugin_settings import SSO_DEFAULTS, SSO_PREFIX

ROLES = ("admin", "member", "viewer")
NAME_CLAIMS = ("email", "preferred_username")
PREFIX = SSO_PREFIX
FLAGS = ("password_signin", "self_signup", "signup_approval")
LISTS = ("scopes", "allowed_domains", "break_glass")
KEYS = tuple(SSO_DEFAULTS)


@attrs.frozen
class SsoSettings:
    issuer: str
    client_id: str
    client_secret: str = attrs.field(repr=False)  # a secret: never logged nor shown
    scopes: tuple[str, ...] = ("openid", "email", "profile")
    groups_claim: str = "groups"
    name_claim: str = "email"
    team_roles: Mapping[str, tuple[tuple[str, str], ...]] = attrs.field(factory=dict)  # claim value -> (team, role)s
    allowed_domains: tuple[str, ...] = ()
    password_signin: bool = True
    break_glass: tuple[str, ...] = ()  # who may still sign in with a password when it is off
    signup: SignUp = SignUp()
    redirect_uri: str = ""  # the callback's public URL; empty: from the request
    post_logout_redirect_uri: str = ""  # where the provider sends one after signing out; empty: the sign-in page
    button_label: str = ""  # the sign-in button's text; empty: "Sign in with single sign-on", translated

    @property
    def managed_teams(self) -> frozenset[str]:
        """Every team the mapping names: memberships there follow the claims."""
        return frozenset(team for pairs in self.team_roles.values() for team, _ in pairs)

    def memberships(self, claim_values: object) -> dict[str, str]:
        """Team name -> role for a person whose groups claim holds ``claim_values``
        (the strongest role when several values map to one team)."""
        from gateway_core.admin.sso_users import strongest

        values = [claim_values] if isinstance(claim_values, str) else claim_values if isinstance(claim_values, list) else []
        found: dict[str, list[str]] = {}
        for value in values:
            for team, role in self.team_roles.get(str(value), ()):
                found.setdefault(team, []).append(role)
        return {team: strongest(roles) for team, roles in found.items()}

    def domain_allowed(self, email: str) -> bool:
        if not self.allowed_domains:
            return True
        return email.rpartition("@")[2].lower() in self.allowed_domains

    def password_allowed(self, name: str) -> bool:
        return self.password_signin or name in self.break_glass


def sso_settings(table: Mapping[str, Any] | None, environ: Mapping[str, str]) -> SsoSettings | None:
    """The settings of ``[plugins.console.sso]`` under the environment's; ``None``
    when no issuer is set (single sign-on off). :class:`ConfigError` names a wrong one."""
    values = dict(table or {})
    unknown = sorted(set(values) - set(KEYS))
    if unknown:
        raise ConfigError(f"[plugins.console.sso]: unknown setting {unknown[0]!r} (known: {', '.join(KEYS)})")
    for key in KEYS:
        text = environ.get(PREFIX + key.upper())
        if text is not None:
            values[key] = _from_text(key, text)
    if not values.get("issuer"):
        return None
    for key in ("client_id", "client_secret"):
        if not isinstance(values.get(key), str) or not values[key]:
            raise ConfigError(f"[plugins.console.sso] {key} (or {PREFIX}{key.upper()}) is required with an issuer")
    name_claim = str(values.get("name_claim", "email"))
    if name_claim not in NAME_CLAIMS:
        raise ConfigError(f"[plugins.console.sso] name_claim must be one of {', '.join(NAME_CLAIMS)}, got {name_claim!r}")
    scopes = tuple(values.get("scopes") or ("openid", "email", "profile"))
    self_signup = _flag(values.get("self_signup", False), "self_signup")
    approval = _flag(values.get("signup_approval", False), "signup_approval")
    if approval and not self_signup:
        raise ConfigError("[plugins.console.sso] signup_approval needs self_signup = true: approval is of self sign-ups")
    signup_role = str(values.get("signup_role", "member"))
    if signup_role not in ROLES:
        raise ConfigError(f"[plugins.console.sso] signup_role must be one of {', '.join(ROLES)}, got {signup_role!r}")
    return SsoSettings(
        issuer=str(values["issuer"]).rstrip("/"), client_id=values["client_id"], client_secret=values["client_secret"],
        scopes=scopes if "openid" in scopes else ("openid", *scopes), groups_claim=str(values.get("groups_claim", "groups")),
        name_claim=name_claim, team_roles=_team_roles(values.get("team_roles") or {}),
        allowed_domains=tuple(domain.lower().lstrip("@") for domain in values.get("allowed_domains") or ()),
        password_signin=_flag(values.get("password_signin", True), "password_signin"),
        break_glass=tuple(str(name) for name in values.get("break_glass") or ()),
        signup=SignUp(
            enabled=self_signup, approval=approval, team=str(values.get("signup_team", "")),
            role=signup_role, group=str(values.get("signup_group", "default")),
        ),
        redirect_uri=str(values.get("redirect_uri", "")), post_logout_redirect_uri=str(values.get("post_logout_redirect_uri", "")),
        button_label=str(values.get("button_label", "")),
    )  # fmt: skip


def _team_roles(table: object) -> dict[str, tuple[tuple[str, str], ...]]:
    """``{"eng-admins": "eng:admin", "staff": ["eng:viewer", "ops:member"]}`` as claim value -> (team, role)s."""
    if not isinstance(table, Mapping):
        raise ConfigError("[plugins.console.sso] team_roles must be a table: claim value = \"team:role\"")
    mapped: dict[str, tuple[tuple[str, str], ...]] = {}
    for value, targets in table.items():
        pairs = []
        for target in [targets] if isinstance(targets, str) else list(targets):
            team, _, role = str(target).partition(":")
            if not team or role not in ROLES:
                raise ConfigError(f"[plugins.console.sso] team_roles {value!r}: {target!r} is not \"team:role\" (roles: {', '.join(ROLES)})")
            pairs.append((team, role))
        mapped[str(value)] = tuple(pairs)
    return mapped


def _from_text(key: str, text: str) -> Any:
    """An environment variable's text as the setting's value."""
    if key in FLAGS:
        return _flag(text, PREFIX + key.upper())
    if key in LISTS:
        return [item.strip() for item in text.split(",") if item.strip()]
    if key == "team_roles":  # eng-admins=eng:admin,eng=eng:member
        table: dict[str, list[str]] = {}
        for item in filter(None, (part.strip() for part in text.split(","))):
            value, _, target = item.partition("=")
            table.setdefault(value.strip(), []).append(target.strip())
        return table
    return text.strip()


def _flag(value: object, where: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{where} must be true or false, got {value!r}")
