package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestDebMaintainerScripts: the Debian package's maintainer scripts, run by
// dash (Debian's /bin/sh) with the arguments dpkg gives them and a
// systemctl that records its calls. The package had none: an upgrade left
// the old binary running (and systemd holding the old unit) until the
// operator restarted it by hand, and a removal left the service running a
// deleted binary. A first install starts nothing; an upgrade restarts the
// service only if it runs; a removal stops it; on a machine without
// systemd running they call nothing.
func TestDebMaintainerScripts(t *testing.T) {
	dash, err := exec.LookPath("dash")
	if err != nil {
		t.Fatal("dash is required (Debian's /bin/sh): apt-get install -y dash")
	}
	var pkg struct {
		Scripts map[string]string `yaml:"scripts"`
	}
	data, err := os.ReadFile(repoRoot + "/packaging/nfpm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &pkg); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"postinstall": "packaging/postinst", "preremove": "packaging/prerm", "postremove": "packaging/postrm"}
	for k, v := range want {
		if pkg.Scripts[k] != v {
			t.Errorf("nfpm.yaml scripts.%s = %q, want %q", k, pkg.Scripts[k], v)
		}
	}
	for _, tt := range []struct {
		name, script string
		args         []string
		systemd      bool
		want         string // systemctl's calls, one a line
	}{
		{"install", "postinst", []string{"configure", ""}, true, "daemon-reload\n"},
		{"upgrade", "postinst", []string{"configure", "0.1.0"}, true, "daemon-reload\ntry-restart jwksverify.service\n"},
		{"install-without-systemd", "postinst", []string{"configure", ""}, false, ""},
		{"upgrade-without-systemd", "postinst", []string{"configure", "0.1.0"}, false, ""},
		{"abort-upgrade", "postinst", []string{"abort-upgrade", "0.2.0"}, true, ""},
		{"remove", "prerm", []string{"remove"}, true, "stop jwksverify.service\n"},
		{"upgrade-prerm", "prerm", []string{"upgrade", "0.3.0"}, true, ""},
		{"remove-postrm", "postrm", []string{"remove"}, true, "daemon-reload\n"},
		{"purge", "postrm", []string{"purge"}, true, "daemon-reload\n"},
		{"upgrade-postrm", "postrm", []string{"upgrade", "0.3.0"}, true, "daemon-reload\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			src, err := os.ReadFile(filepath.Join(repoRoot, "packaging", tt.script))
			if err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Stat(filepath.Join(repoRoot, "packaging", tt.script)); err != nil || fi.Mode()&0o111 == 0 {
				t.Errorf("packaging/%s is not executable", tt.script)
			}
			// The script as dpkg runs it, with systemd's run directory and
			// the purged link moved into the test's directory.
			runDir := filepath.Join(dir, "run-systemd-system")
			if tt.systemd {
				if err := os.Mkdir(runDir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			text := strings.ReplaceAll(string(src), "/run/systemd/system", runDir)
			text = strings.ReplaceAll(text, "/etc/systemd/system/", dir+"/etc/")
			if text == string(src) {
				t.Fatalf("packaging/%s does not look for /run/systemd/system", tt.script)
			}
			script := filepath.Join(dir, tt.script)
			if err := os.WriteFile(script, []byte(text), 0o755); err != nil {
				t.Fatal(err)
			}
			calls := filepath.Join(dir, "calls")
			bin := filepath.Join(dir, "bin")
			if err := os.Mkdir(bin, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(bin, "systemctl"), []byte("#!/bin/sh\necho \"$*\" >> "+calls+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(dir, "etc", "multi-user.target.wants", "jwksverify.service")
			if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("/usr/lib/systemd/system/jwksverify.service", link); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(dash, append([]string{script}, tt.args...)...)
			cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin"}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s %q: %v\n%s", tt.script, tt.args, err, out)
			}
			got, _ := os.ReadFile(calls)
			if string(got) != tt.want {
				t.Errorf("%s %q called systemctl %q, want %q", tt.script, tt.args, got, tt.want)
			}
			_, err = os.Lstat(link)
			if purged := os.IsNotExist(err); purged != (tt.name == "purge") {
				t.Errorf("%s %q: the enable link removed = %v, want %v", tt.script, tt.args, purged, tt.name == "purge")
			}
		})
	}
}
