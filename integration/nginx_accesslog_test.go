package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestNginxAccessLogNeverHoldsTheQueryToken: with a query token source
// (token_sources: [{query: access_token}]), the nginx configuration
// `jwksverify proxy-config nginx` writes logs each request to stdout in
// nginx's default combined format, whose $request is the request line with
// its query: every bearer token a client sent reached the log (SPEC: logs
// never contain the token). The access log of the generated file must not
// hold the token.
func TestNginxAccessLogNeverHoldsTheQueryToken(t *testing.T) {
	nginx := requireNginx(t)
	b := startBackends(t, "nginx", false, "", "token_sources: [{query: access_token}]\n")
	port := freePort(t)
	conf := proxyConfig(t, "nginx", b, "127.0.0.1:"+strconv.Itoa(port))
	dir := t.TempDir()
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProcess(t, "nginx", exec.Command(nginx,
		"-e", "stderr", "-p", dir+"/", "-c", confPath,
		"-g", fmt.Sprintf("daemon off; pid %s;", filepath.Join(dir, "nginx.pid"))))
	addr := "127.0.0.1:" + strconv.Itoa(port)
	waitTCP(t, p, addr)
	valid := b.is.Token(nil)
	status, _, body := get(t, httpClient(), "http://"+addr+"/orders/7?access_token="+valid, nil)
	if status != 200 {
		t.Fatalf("status = %d, want 200 (body %q): nothing was tested", status, body)
	}
	sig := valid[strings.LastIndexByte(valid, '.')+1:]
	deadline := time.Now().Add(2 * time.Second)
	for !strings.Contains(p.Output(), "/orders/7") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if out := p.Output(); strings.Contains(out, sig) {
		t.Fatalf("nginx's access log holds the query token:\n%s", out)
	}
}
