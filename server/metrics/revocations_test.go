package metrics

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// TestRevocationMetrics: entries added are counted by issuer, source and
// kind; live entries by issuer; the copy's age is exported.
func TestRevocationMetrics(t *testing.T) {
	e := newEnv(t, envConfig{})
	st, err := revoke.OpenMemory(revoke.MemoryOptions{Dir: t.TempDir(), Retention: time.Hour, Now: e.Clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := e.m.UseRevocations(st); err != nil {
		t.Fatal(err)
	}
	for _, en := range []revoke.Entry{
		{Issuer: servertest.IssuerA, Kind: revoke.KindSID, Value: "s1", Source: revoke.SourceBackchannelLogout},
		{Issuer: servertest.IssuerA, Kind: revoke.KindSID, Value: "s2", Source: revoke.SourceBackchannelLogout},
		{Issuer: servertest.IssuerA, Kind: revoke.KindJTI, Value: "j", Source: revoke.SourceAdmin},
	} {
		if _, err := st.Add(context.Background(), en); err != nil {
			t.Fatal(err)
		}
	}
	body := get(e.m.Handler(), "/metrics").Body.String()
	for _, want := range []string{
		`jwksverify_revocations_total{issuer="` + servertest.IssuerA + `",kind="sid",source="backchannel_logout"} 2`,
		`jwksverify_revocations_total{issuer="` + servertest.IssuerA + `",kind="jti",source="admin"} 1`,
		`jwksverify_revocation_entries{issuer="` + servertest.IssuerA + `"} 3`,
		`jwksverify_revocation_copy_age_seconds 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
