// gen.mjs writes fixtures.json (to stdout): ID tokens signed by panva/jose
// with jwksverify's test keys (internal/testkeys/testdata), whose at_hash and
// c_hash panva/oidc-token-hash computes — an implementation independent of
// verify.HalfHash. verify/idtoken_fixtures_test.go checks the committed
// fixtures, and runs this script again (node, with `npm ci` done here) to
// compare its hashes with the committed ones.
//
//   cd verify/testdata/idtoken && npm ci && node gen.mjs > fixtures.json
import { readFileSync } from 'node:fs';
import { SignJWT, importPKCS8 } from 'jose';
import tokenHash from 'oidc-token-hash';

const keys = new URL('../../../internal/testkeys/testdata/', import.meta.url);
const algs = [
  ['RS256', 'rsa2048-a'], ['RS384', 'rsa2048-a'], ['RS512', 'rsa2048-a'], ['PS256', 'rsa2048-a'],
  ['ES256', 'ec256-a'], ['ES384', 'ec384'], ['ES512', 'ec521'], ['EdDSA', 'ed25519-a'],
];
// The tests' fixed clock, verify's t0: 2026-03-04T05:06:07Z.
const t0 = Date.UTC(2026, 2, 4, 5, 6, 7) / 1000;

const out = [];
for (const [alg, name] of algs) {
  const key = await importPKCS8(readFileSync(new URL(name + '.pem', keys), 'utf8'), alg);
  const accessToken = `access-token-for-${alg}.with-dots_and-dashes`;
  const code = `SplxlOBeZQQYbYS6WxSbIA-${alg}`;
  const nonce = `n-0S6_WzA2Mj-${alg}`;
  const crv = alg === 'EdDSA' ? 'Ed25519' : undefined;
  const atHash = tokenHash.generate(accessToken, alg, crv);
  const cHash = tokenHash.generate(code, alg, crv);
  const token = await new SignJWT({
    nonce, at_hash: atHash, c_hash: cHash, auth_time: t0 - 60, acr: 'urn:mace:incommon:iap:silver', azp: 'web-app',
  })
    .setProtectedHeader({ alg, kid: 'k-' + alg, typ: 'JWT' })
    .setIssuer('https://a.example.com/')
    .setSubject('alice')
    .setAudience('web-app')
    .setIssuedAt(t0)
    .setExpirationTime(t0 + 3600)
    .sign(key);
  out.push({ alg, kid: 'k-' + alg, token, access_token: accessToken, code, nonce, at_hash: atHash, c_hash: cHash });
}
process.stdout.write(JSON.stringify(out, null, 2) + '\n');
