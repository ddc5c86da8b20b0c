// Bundled in place of openid-client, which @kubernetes/client-node's OIDC auth-provider imports to refresh an expired
// id-token (scripts/build.ts): vmzones hands the library its own refresh client (plugin/kube/oidc-refresh.ts: the
// library's path cannot work with openid-client 6), so these are never reached; if one were, it fails by name.

const replaced = (name) => () => {
  throw new Error(`openid-client ${name}: vmzones refreshes OIDC id-tokens with plugin/kube/oidc-refresh.ts`);
};

export const discovery = replaced('discovery');
export const refreshTokenGrant = replaced('refreshTokenGrant');
export const customFetch = Symbol('openid-client customFetch (not bundled)');
