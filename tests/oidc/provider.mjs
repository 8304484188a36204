// A local OpenID Connect provider for the single sign-on tests (started by tests/oidc/provider.py).
//
// node provider.mjs CONFIG.json, where CONFIG holds
//   {"port": 4100, "client": {"client_id", "client_secret", "redirect_uris": [...],
//    "post_logout_redirect_uris": [...]},
//    "accounts": {"LOGIN": {"email": "...", "email_verified": true, "name": "...",
//                           "id_token_ttl": 3600}, ...}}
// The provider is `oidc-provider` (a certified OpenID Provider library) with its development
// login form: any password is accepted for a LOGIN in "accounts", other logins are refused.
// The app is a first-party client: consent for `openid email profile` is granted without a
// page, and the claims of those scopes are put in the ID token (where Streamlit reads them).
import { readFileSync } from 'node:fs';

import Provider, { errors } from 'oidc-provider';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const issuer = `http://127.0.0.1:${config.port}`;
const SCOPE = 'openid email profile';

const page = (title, body) => `<!DOCTYPE html><html><head><meta charset="utf-8">
<title>${title}</title></head><body><h1>${title}</h1>${body}</body></html>`;
const text = (value) => String(value).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const provider = new Provider(issuer, {
  clients: [{
    ...config.client,
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
  conformIdTokenClaims: false, // scope claims in the ID token, as hospital IdPs send them
  ttl: { IdToken: (ctx, token) => config.accounts[token.available.sub]?.id_token_ttl ?? 3600 },
  cookies: { // its session kept over http (a SameSite=None cookie needs https)
    keys: ['nmb-tests-only'],
    long: { signed: true, sameSite: 'lax' },
    short: { signed: true, sameSite: 'lax' },
  },
  features: {
    devInteractions: { enabled: true },
    rpInitiatedLogout: {
      enabled: true,
      logoutSource: async (ctx, form) => {
        ctx.body = page('Sign out', `${form}<button type="submit" form="op.logoutForm"
          value="yes" name="logout">Yes, sign me out</button>`);
      },
    },
  },
  async findAccount(ctx, id) {
    const account = Object.hasOwn(config.accounts, id) ? config.accounts[id] : undefined;
    if (!account) throw new errors.AccessDenied(`no account ${id} at this provider`);
    const { id_token_ttl: ttl, ...claims } = account;
    return { accountId: id, claims: async () => ({ sub: id, ...claims }) };
  },
  async loadExistingGrant(ctx) {
    const { oidc } = ctx;
    const grantId = oidc.result?.consent?.grantId || oidc.session.grantIdFor(oidc.client.clientId);
    if (grantId) return oidc.provider.Grant.find(grantId);
    const grant = new oidc.provider.Grant({
      clientId: oidc.client.clientId, accountId: oidc.session.accountId,
    });
    grant.addOIDCScope(SCOPE);
    await grant.save();
    return grant;
  },
  async renderError(ctx, out) {
    ctx.type = 'html';
    ctx.body = page('Sign-in error', `<p>${text(out.error)}: ${text(out.error_description)}</p>`);
  },
});

provider.listen(config.port, '127.0.0.1', () => console.log(`listening on ${issuer}`));
