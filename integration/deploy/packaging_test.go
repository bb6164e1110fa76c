package deploy

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestSystemdUnit checks packaging/jwksverify.service, which the Debian
// package installs: it runs the binary the package installs with the
// image's --config path, reloads with SIGHUP, gives the drain time, runs
// as a dynamic unprivileged user on a read-only system, and systemd's own
// offline review rates its exposure low (systemd-analyze security).
func TestSystemdUnit(t *testing.T) {
	unit, err := os.ReadFile(repoRoot + "/packaging/jwksverify.service")
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Contents []struct {
			Src string `yaml:"src"`
			Dst string `yaml:"dst"`
		} `yaml:"contents"`
	}
	data, err := os.ReadFile(repoRoot + "/packaging/nfpm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &pkg); err != nil {
		t.Fatal(err)
	}
	installed := map[string]string{}
	for _, c := range pkg.Contents {
		installed[c.Src] = c.Dst
	}
	if installed["packaging/jwksverify.service"] != "/usr/lib/systemd/system/jwksverify.service" {
		t.Errorf("nfpm.yaml installs the unit at %q", installed["packaging/jwksverify.service"])
	}
	bin := installed["dist/deb/jwksverify"]
	directives := map[string][]string{}
	for line := range strings.Lines(string(unit)) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && !strings.HasPrefix(line, "#") {
			directives[k] = append(directives[k], v)
		}
	}
	for _, want := range []struct{ key, value string }{
		{"ExecStart", bin + " serve --config /etc/jwksverify/config.yaml"},
		{"ExecReload", "/bin/kill -HUP $MAINPID"},
		{"DynamicUser", "yes"},
		{"StateDirectory", "jwksverify"},
		{"NoNewPrivileges", "yes"},
		{"ProtectSystem", "strict"},
		{"ProtectHome", "yes"},
		{"PrivateTmp", "yes"},
		{"CapabilityBoundingSet", ""},
		{"RestrictAddressFamilies", "AF_INET AF_INET6 AF_UNIX"},
		{"MemoryDenyWriteExecute", "yes"},
		{"SystemCallFilter", "@system-service"},
		{"WantedBy", "multi-user.target"},
	} {
		t.Run(want.key, func(t *testing.T) {
			if !strings.Contains(strings.Join(directives[want.key], "\n")+"\n", want.value+"\n") {
				t.Errorf("%s = %q, want %q", want.key, directives[want.key], want.value)
			}
		})
	}
	t.Run("stop-timeout-covers-the-drain", func(t *testing.T) {
		var n int
		if m := regexp.MustCompile(`^(\d+)s$`).FindStringSubmatch(strings.Join(directives["TimeoutStopSec"], "")); m != nil {
			n, _ = strconv.Atoi(m[1])
		}
		if n <= 15 {
			t.Errorf("TimeoutStopSec = %q, want more than the default shutdown_delay + shutdown_timeout (15s)", directives["TimeoutStopSec"])
		}
	})
	t.Run("systemd-analyze-security", func(t *testing.T) {
		if _, err := exec.LookPath("systemd-analyze"); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatal("systemd-analyze is required in CI (package systemd)")
			}
			t.Skip("no systemd-analyze")
		}
		// --threshold is in tenths: above 2.5 of 10 fails.
		out, err := exec.Command("systemd-analyze", "security", "--offline=yes", "--threshold=25",
			repoRoot+"/packaging/jwksverify.service").CombinedOutput()
		if err != nil {
			t.Fatalf("systemd-analyze security: %v\n%s", err, out)
		}
		m := regexp.MustCompile(`Overall exposure level for jwksverify.service: (\d+\.\d)`).FindStringSubmatch(string(out))
		if m == nil {
			t.Fatalf("no exposure level in:\n%s", out)
		}
		if e, err := strconv.ParseFloat(m[1], 64); err != nil || e > 2.5 {
			t.Errorf("exposure %s, want at most 2.5 (of 10):\n%s", m[1], out)
		}
	})
}
