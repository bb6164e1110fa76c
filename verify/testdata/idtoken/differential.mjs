// differential.mjs verifies the tokens of verify's token differential
// (verify/differential_jose_test.go) with panva/jose's jwtVerify, under the
// same options as the verifier's configuration, and writes each verdict to
// stdout as JSON. Its one argument is the input file the test wrote:
//
//   { "now": <seconds>,
//     "keysets": {<name>: {<kid>: {"pem": <SPKI>} | {"secret": <base64>}}},
//     "configs": [{"issuers": [{"issuer", "keyset"}], "algorithms", "audience",
//                  "clockTolerance", "requiredClaims"}],
//     "cases": [{"name", "cfg", "token"}] }
//
// A token goes to the issuer its iss (read unverified) names, the first
// when it names none or cannot be read. A token with a kid is checked with
// that kid's key of the issuer's set only; one without kid (or with
// "kid": "") with each key in turn, as the verifier does.
import { readFileSync } from 'node:fs';
import { createPublicKey } from 'node:crypto';
import { decodeJwt, jwtVerify } from 'jose';

const input = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const keysets = new Map();
for (const [name, set] of Object.entries(input.keysets)) {
  const keys = new Map();
  for (const [kid, k] of Object.entries(set)) {
    keys.set(kid, k.pem !== undefined ? createPublicKey(k.pem) : new Uint8Array(Buffer.from(k.secret, 'base64')));
  }
  keysets.set(name, keys);
}

const kidless = new Error('no kid');

async function verify(token, keys, options) {
  try {
    return await jwtVerify(token, (header) => {
      if (!Object.hasOwn(header, 'kid') || header.kid === '') throw kidless;
      if (typeof header.kid !== 'string') throw new Error('kid is not a string');
      const key = keys.get(header.kid);
      if (key === undefined) throw new Error('unknown kid');
      return key;
    }, options);
  } catch (err) {
    if (err !== kidless) throw err;
  }
  let first;
  for (const key of keys.values()) {
    try {
      return await jwtVerify(token, key, options);
    } catch (err) {
      // A key of another type or a signature it does not verify: try the
      // next; any other refusal (a claim) is the answer.
      const sig = err.code === 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' || err instanceof TypeError;
      if (!sig) throw err;
      first ??= err;
    }
  }
  throw first;
}

const out = [];
for (const c of input.cases) {
  const cfg = input.configs[c.cfg];
  let route = cfg.issuers[0];
  try {
    route = cfg.issuers.find((is) => is.issuer === decodeJwt(c.token).iss) ?? route;
  } catch {
    // jwtVerify refuses it as well.
  }
  const options = {
    algorithms: cfg.algorithms,
    issuer: route.issuer,
    audience: cfg.audience,
    clockTolerance: cfg.clockTolerance,
    requiredClaims: cfg.requiredClaims,
    currentDate: new Date(input.now * 1000),
  };
  try {
    const { payload } = await verify(c.token, keysets.get(route.keyset), options);
    out.push({ name: c.name, ok: true, iss: payload.iss, sub: payload.sub, aud: payload.aud, exp: payload.exp === undefined ? '' : String(payload.exp) });
  } catch (err) {
    out.push({ name: c.name, ok: false, code: String(err.code ?? err.name), message: String(err.message) });
  }
}
process.stdout.write(JSON.stringify(out) + '\n');
