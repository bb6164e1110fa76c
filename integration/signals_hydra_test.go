package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestHydraBackchannelLogout is issue 27's acceptance against a real Ory
// Hydra v2.3.0: a client whose backchannel_logout_uri is jwksverify's; a
// login (login and consent accepted through Hydra's admin API, the consent
// putting the login session's id in the access token as sid, which Hydra
// allows at the top level with oauth2.allowed_top_level_claims); then a
// logout through Hydra's own flow. Hydra posts its logout token (sid only,
// typ JWT) and the session's access token is refused from then on, while a
// token of another session of the same user survives.
func TestHydraBackchannelLogout(t *testing.T) {
	h := startHydra(t, "OAUTH2_ALLOWED_TOP_LEVEL_CLAIMS=sid")
	port := freePort(t)
	listen := fmt.Sprintf("127.0.0.1:%d", port)
	const redirect = "http://127.0.0.1:1/cb"
	c := h.createClient(t, map[string]any{
		"grant_types": []string{"authorization_code"}, "response_types": []string{"code"}, "scope": "openid",
		"redirect_uris": []string{redirect}, "token_endpoint_auth_method": "client_secret_post",
		"access_token_strategy": "jwt", "backchannel_logout_uri": "http://" + listen + "/v1/logout/backchannel",
		"backchannel_logout_session_required": true,
	})
	j := startJWKSVerify(t, fmt.Sprintf(`listen: %s
state_dir: %s
revocation: {store: memory}
issuers:
  - issuer: %q
    discovery: true
    backchannel_logout: {audiences: [%q], revoke: session}
`, listen, t.TempDir(), h.issuer, c.id))

	first := h.login(t, c, redirect, true)
	second := h.login(t, c, redirect, true) // another browser: another session of bob
	bare := h.login(t, c, redirect, false)  // Hydra's default: no sid in the access token
	for _, tok := range []hydraLogin{first, second} {
		if code := authz(t, j, tok.access); code != http.StatusOK {
			t.Fatalf("the access token before the logout: authz %d, want 200", code)
		}
		var claims struct {
			Sid string `json:"sid"`
		}
		if v := verifyToken(t, j, tok.access); json.Unmarshal(mustMarshal(v.Claims), &claims) != nil || claims.Sid != tok.sid || tok.sid == "" {
			t.Fatalf("the access token's sid = %q, want the login session %q (consent session.access_token)", claims.Sid, tok.sid)
		}
	}
	if first.sid == second.sid {
		t.Fatal("both logins share a session")
	}

	h.logout(t, first.browser)
	waitFor(t, 20*time.Second, "Hydra's logout token revoking the session", func() bool {
		return authz(t, j, first.access) == http.StatusUnauthorized
	})
	if v := verifyToken(t, j, first.access); v.Valid || v.Error != "revoked" {
		t.Errorf("/v1/verify of the logged-out session's token = %+v, want revoked", v)
	}
	if code := authz(t, j, second.access); code != http.StatusOK {
		t.Errorf("the other session's token after the logout: authz %d, want 200", code)
	}

	// Without the sid in its access token, Hydra's logout (which names
	// only the session) revokes nothing that token carries: it survives,
	// as OPERATIONS.md warns.
	h.logout(t, bare.browser)
	waitFor(t, 20*time.Second, "Hydra's second logout token", func() bool {
		return strings.Count(j.Output(), `"msg":"back-channel logout applied"`) >= 2
	})
	if code := authz(t, j, bare.access); code != http.StatusOK {
		t.Errorf("a token without sid after its session's logout: authz %d, want 200 (nothing names it)", code)
	}
	out := j.Output()
	if !strings.Contains(out, `"msg":"back-channel logout applied"`) || !strings.Contains(out, `"kind":"sid"`) {
		t.Errorf("jwksverify did not log the logout as a sid entry:\n%s", out)
	}
}

func mustMarshal(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// createClient registers a client with the given metadata at Hydra's
// admin API.
func (h *hydra) createClient(t *testing.T, meta map[string]any) hydraClient {
	t.Helper()
	body, _ := json.Marshal(meta)
	resp, err := httpClient().Post(h.admin+"/admin/clients", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c struct {
		ID     string `json:"client_id"`
		Secret string `json:"client_secret"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create client: %d %v", resp.StatusCode, err)
	}
	return hydraClient{c.ID, c.Secret}
}

// hydraLogin is the outcome of one login: its browser (the cookies of
// Hydra's session), the login session's id and the access token.
type hydraLogin struct {
	browser *http.Client
	sid     string
	access  string
}

// login runs an authorization code flow for c in a new browser, accepting
// the login (remembered: the browser gets a session) and the consent
// through the admin API; with mapSID the consent puts the login session's
// id into the access token as sid.
func (h *hydra) login(t *testing.T, c hydraClient, redirect string, mapSID bool) hydraLogin {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	browser := httpClient()
	browser.Jar = jar
	auth := h.public + "/oauth2/auth?response_type=code&scope=openid&state=integration-state&client_id=" +
		url.QueryEscape(c.id) + "&redirect_uri=" + url.QueryEscape(redirect)
	next := h.accept(t, "login", hydraFollow(t, browser, auth, "login_challenge"), `{"subject":"bob","remember":true,"remember_for":0}`)
	challenge := hydraFollow(t, browser, next, "consent_challenge")
	var consent struct {
		LoginSessionID string `json:"login_session_id"`
	}
	h.getJSON(t, h.admin+"/admin/oauth2/auth/requests/consent?consent_challenge="+url.QueryEscape(challenge), &consent)
	if consent.LoginSessionID == "" {
		t.Fatal("the consent request has no login_session_id")
	}
	accept := map[string]any{"grant_scope": []string{"openid"}, "remember": true}
	if mapSID {
		accept["session"] = map[string]any{"access_token": map[string]any{"sid": consent.LoginSessionID}}
	}
	body, _ := json.Marshal(accept)
	code := hydraFollow(t, browser, h.accept(t, "consent", challenge, string(body)), "code")
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect}, "client_id": {c.id}, "client_secret": {c.secret}}
	resp, err := httpClient().PostForm(h.public+"/oauth2/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("token: %d %v", resp.StatusCode, err)
	}
	return hydraLogin{browser: browser, sid: consent.LoginSessionID, access: tok.AccessToken}
}

// logout runs Hydra's logout flow in browser: /oauth2/sessions/logout,
// the logout request accepted through the admin API, and the verifier
// followed, which ends the session and sends the back-channel logouts.
func (h *hydra) logout(t *testing.T, browser *http.Client) {
	t.Helper()
	challenge := hydraFollow(t, browser, h.public+"/oauth2/sessions/logout", "logout_challenge")
	req, _ := http.NewRequest(http.MethodPut, h.admin+"/admin/oauth2/auth/requests/logout/accept?logout_challenge="+url.QueryEscape(challenge), nil)
	resp, err := httpClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		RedirectTo string `json:"redirect_to"`
	}
	err = json.NewDecoder(resp.Body).Decode(&r)
	resp.Body.Close()
	if err != nil || r.RedirectTo == "" {
		t.Fatalf("accept logout: %d %v", resp.StatusCode, err)
	}
	resp, err = browser.Get(r.RedirectTo)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound && resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout verifier: %d, want a redirect to the post-logout page", resp.StatusCode)
	}
}

// accept PUTs body to the admin API's accept endpoint of a login or
// consent challenge and answers where the browser goes next.
func (h *hydra) accept(t *testing.T, kind, challenge, body string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, h.admin+"/admin/oauth2/auth/requests/"+kind+"/accept?"+kind+"_challenge="+url.QueryEscape(challenge), strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		RedirectTo string `json:"redirect_to"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.RedirectTo == "" {
		t.Fatalf("accept %s: %d %v", kind, resp.StatusCode, err)
	}
	return r.RedirectTo
}

// hydraFollow GETs u in browser and returns the query parameter param of
// the redirect it answers.
func hydraFollow(t *testing.T, browser *http.Client, u, param string) string {
	t.Helper()
	resp, err := browser.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Query().Get(param) == "" {
		t.Fatalf("GET %s: %d, Location %q: no %s", u, resp.StatusCode, resp.Header.Get("Location"), param)
	}
	return loc.Query().Get(param)
}
