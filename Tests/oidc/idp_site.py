"""Django pieces of the test OpenID Connect provider (see provider.py).

Imported by name from the settings that provider.py configures: the URL
configuration, the OIDC_USERINFO function, the groups claim and a cheap
password hasher.
"""

from django.contrib.auth import views as auth_views
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.http import HttpResponse
from django.urls import include, path, re_path
from oidc_provider.lib.claims import ScopeClaims
from oidc_provider.views import ProviderInfoView


class FastPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    """PBKDF2 with few iterations: test users are (re)created at every start
    and every login checks a password, so Django's 1,000,000 iterations would
    cost about a second each on a small machine."""

    algorithm = "pbkdf2_sha256_test"
    iterations = 1000


def userinfo(claims, user):
    """OIDC_USERINFO: the standard claims of a Django user. With
    OIDC_IDTOKEN_INCLUDE_CLAIMS they go into the ID token too (scope
    `profile` gives the names, `email` the address)."""
    full_name = " ".join(part for part in (user.first_name, user.last_name) if part)
    claims["name"] = full_name or user.username
    claims["given_name"] = user.first_name
    claims["family_name"] = user.last_name
    claims["preferred_username"] = user.username
    claims["email"] = user.email
    claims["email_verified"] = bool(user.email)
    return claims


class GroupClaims(ScopeClaims):
    """OIDC_EXTRA_SCOPE_CLAIMS: the user's Django groups as a `groups` claim,
    given with the `profile` scope (into the ID token too, with
    OIDC_IDTOKEN_INCLUDE_CLAIMS), as a Keycloak realm's group mapper adds
    one. A user in no group gets no claim."""

    def scope_profile(self):
        groups = sorted(self.user.groups.values_list("name", flat=True))
        return {"groups": groups} if groups else {}


class DiscoveryView(ProviderInfoView):
    """django-oidc-provider's discovery document, plus three fields it leaves
    out though it honours them: PKCE methods (the token endpoint checks S256
    and plain), the scopes and the claims it can give."""

    def _build_response_dict(self, request):
        dic = super()._build_response_dict(request)
        dic.setdefault("code_challenge_methods_supported", ["S256", "plain"])
        dic.setdefault("scopes_supported", ["openid", "profile", "email"])
        dic.setdefault(
            "claims_supported",
            [
                "sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "at_hash",
                "name", "given_name", "family_name", "nickname", "preferred_username",
                "email", "email_verified", "groups",
            ],
        )
        return dic


def index(request):
    who = request.user.get_username() if request.user.is_authenticated else "nobody"
    return HttpResponse(
        "test OpenID Connect provider; signed in: %s\n" % who, content_type="text/plain"
    )


urlpatterns = [
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(template_name="login.html"),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    # Same path as the include's "provider-info" (which still names the issuer).
    re_path(r"^openid/\.well-known/openid-configuration/?$", DiscoveryView.as_view()),
    path("openid/", include("oidc_provider.urls", namespace="oidc_provider")),
    path("favicon.ico", lambda request: HttpResponse(status=204)),
    path("", index, name="index"),
]
