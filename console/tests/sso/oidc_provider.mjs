// A real OpenID provider (panva's oidc-provider, installed by `make oidc-provider`)
// on loopback for the console's single sign-on tests (console/tests/sso/).
//
//   OIDC_PROVIDER_MODULES=.venv/oidc-provider/node_modules node oidc_provider.mjs CONFIG.json
//
// CONFIG.json: {"port", "issuer"?, "clients": [{client_id, client_secret, redirect_uris,
// post_logout_redirect_uris}], "jwks": {"keys": [private JWKs]}, "accounts": FILE}.
// "issuer" (default http://127.0.0.1:PORT) names another URL when a proxy in front of
// the provider is the one browser and gateway talk to; the endpoints' URLs come from
// each request's Host, which such a proxy passes on.
// FILE holds {"login": {"email", "groups", ...}}, read again at every sign-in, so a
// test changes an account's claims between two sign-ins by rewriting it.
// Sign-in goes through the provider's own development pages (any password).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(process.env.OIDC_PROVIDER_MODULES + '/');
const { default: Provider } = await import(require.resolve('oidc-provider'));

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const issuer = config.issuer || `http://127.0.0.1:${config.port}`;

function account(id) {
  const accounts = JSON.parse(readFileSync(config.accounts, 'utf8'));
  return accounts[id];
}

const provider = new Provider(issuer, {
  clients: config.clients.map((client) => ({
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
    ...client,
  })),
  jwks: config.jwks,
  cookies: { keys: ['relaygate-tests-cookie-key'] },
  pkce: { required: () => true },
  conformIdTokenClaims: false, // the claims asked for by scope go into the ID token too
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['preferred_username', 'name'],
    groups: ['groups'],
  },
  features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
  async findAccount(ctx, id) {
    if (!account(id)) return undefined;
    return {
      accountId: id,
      async claims() {
        const claims = account(id) || {};
        return { sub: id, email_verified: true, preferred_username: id, ...claims };
      },
    };
  },
});
provider.on('server_error', (ctx, error) => console.error('server_error', error));
provider.listen(config.port, '127.0.0.1', () => console.log(`listening ${issuer}`));
