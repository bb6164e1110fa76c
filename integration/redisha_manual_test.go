package integration

import (
	"testing"
	"time"
)

// TestRedisSentinelManualFailover: a Sentinel failover whose old master
// stays up (SENTINEL FAILOVER for maintenance, or a master cut off from the
// sentinels but not from jwksverify) under a stream of admin revocations,
// with acknowledge_replicas equal to the master's replicas: every
// revocation acknowledged (201) before, during or after the switch is
// enforced by both jwksverify replicas after it.
//
// Until the sentinels reconfigure it, the old master takes writes, and the
// replicas not promoted still follow it: with acknowledge_replicas 1 of two
// replicas (what OPERATIONS recommended) its WAIT was answered by the
// replica left behind, and the revocations it acknowledged (65 of 218 in
// one run) were lost when the old master and that replica resynchronized
// from the promoted one, and dropped from every replica's copy. With all
// replicas asked for, the promoted replica's detachment makes the old
// master's WAIT fall short: 503, nothing acknowledged.
func TestRedisSentinelManualFailover(t *testing.T) {
	s := startSentinelSet(t)
	t.Setenv("JV_REVOKE_SECRET", revokeSecret)
	is := newTestIssuer(t)
	conf := dpopRedisConfig(is, s.config(len(s.nodes)-1))
	a, b := startJWKSVerify(t, conf), startJWKSVerify(t, conf)
	stop := make(chan struct{})
	revoked := revocations(t, []string{a.Admin, b.Admin}, is, "revoked-across-manual-failover", stop)
	time.Sleep(2 * time.Second) // revocations acknowledged before the switch
	old := s.masterPort(t)
	if out, err := redisCLI(t, s.sentinels[0].port, "SENTINEL", "FAILOVER", "mymaster"); err != nil || out != "OK" {
		t.Fatalf("SENTINEL FAILOVER = %q %v", out, err)
	}
	waitFor(t, 30*time.Second, "a replica promoted", func() bool {
		p := s.masterPort(t)
		return p != 0 && p != old
	})
	time.Sleep(4 * time.Second) // through the reconfiguration and after it
	close(stop)
	var jtis []string
	for _, r := range revoked() {
		jtis = append(jtis, r.jti)
	}
	if len(jtis) == 0 {
		t.Fatal("no revocation acknowledged")
	}
	took := enforced(t, []string{a.HTTP, b.HTTP}, is, jtis, 15*time.Second)
	t.Logf("%d revocations acknowledged (acknowledge_replicas: %d) across a SENTINEL FAILOVER, every one enforced by both replicas (checked %v after the load stopped)",
		len(jtis), len(s.nodes)-1, took.Round(time.Millisecond))
	for _, j := range []*jwksverifyProc{a, b} {
		if j.exited() {
			t.Errorf("a jwksverify replica exited: %s", j.Output())
		}
	}
}
