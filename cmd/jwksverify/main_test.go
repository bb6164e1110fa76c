package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/internal/testlog"
)

// The jwksverify binary, built once on first use (so that fuzz workers,
// which run no binary test, never build it) and removed by TestMain.
var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

// binary returns the path of the built jwksverify binary.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "jwksverify-test-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "jwksverify")
		build := exec.Command("go", "build", "-o", binPath, ".")
		out, err := build.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatalf("building jwksverify: %v", buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	if code == 0 {
		// The in-process tests (config, verify, keys through run) must leave
		// no goroutine behind.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// result is what one run of the binary produced.
type result struct {
	stdout, stderr string
	code           int
}

// runBin runs the binary with args, extra environment (KEY=VALUE) and
// stdin, and waits for it (at most 20s).
func runBin(t *testing.T, env []string, stdin string, args ...string) result {
	t.Helper()
	// Build first: the timeout is the run's, and a cold build cache can take
	// longer than that on its own.
	bin := binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(cleanEnv(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("run %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	if ctx.Err() != nil {
		t.Fatalf("run %v: timed out; stderr: %s", args, errb.String())
	}
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

// cleanEnv is the test's environment without jwksverify's own variables.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "JWKSVERIFY_") {
			env = append(env, kv)
		}
	}
	return env
}

// process is a running binary whose stderr lines are read as they come.
type process struct {
	cmd    *exec.Cmd
	lines  chan string // stderr, line by line
	done   chan error
	stderr *testlog.Buffer
}

// startBin starts the binary and returns at once. The process is killed at
// the end of the test if it is still running.
func startBin(t *testing.T, env []string, stdout io.Writer, args ...string) *process {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(cleanEnv(), env...)
	if stdout != nil {
		cmd.Stdout = stdout
	}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, lines: make(chan string, 1024), done: make(chan error, 1),
		stderr: &testlog.Buffer{}}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer close(p.lines)
		sc := bufio.NewScanner(errPipe)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			fmt.Fprintln(p.stderr, sc.Text())
			select {
			case p.lines <- sc.Text():
			default: // nobody is reading: keep the record in stderr only
			}
		}
	}()
	go func() {
		<-readDone
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// waitLog waits for a JSON log line whose msg is msg and returns it decoded.
func (p *process) waitLog(t *testing.T, msg string) map[string]any {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				t.Fatalf("process ended before logging %q; stderr:\n%s", msg, p.stderr.String())
			}
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
				return m
			}
		case <-timeout:
			t.Fatalf("no %q log line in 20s; stderr:\n%s", msg, p.stderr.String())
		}
	}
}

// wait waits for the process to exit and returns its exit status.
func (p *process) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case err := <-p.done:
		if err == nil {
			return 0
		}
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		t.Fatalf("wait: %v", err)
	case <-time.After(within):
		t.Fatalf("process still running after %s; stderr:\n%s", within, p.stderr.String())
	}
	return -1
}

// writeFile writes data to name in a test directory and returns its path.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// testJWKS is a JWKS document with the RS256 and ES256 test keys.
func testJWKS() []byte {
	return testkeys.JWKS(
		testkeys.JWK{Key: testkeys.Private(testkeys.RSA2048A), Kid: "rsa-a", Alg: "RS256", Use: "sig"},
		testkeys.JWK{Key: testkeys.Private(testkeys.EC256A), Kid: "ec-a", Alg: "ES256", Use: "sig"},
	)
}

// mintRS256 mints an RS256 token under kid rsa-a with claims.
func mintRS256(claims map[string]any) string {
	return testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048A), map[string]any{"kid": "rsa-a"}, claims)
}

// claimsAt returns claims for iss/aud valid for an hour around at.
func claimsAt(iss, aud string, at time.Time) map[string]any {
	return map[string]any{
		"iss": iss, "aud": aud, "sub": "alice",
		"iat": at.Unix(), "nbf": at.Unix(), "exp": at.Add(time.Hour).Unix(),
	}
}

// decodeJSONLine decodes the last non-empty line of out as a JSON object.
func decodeJSONLine(t *testing.T, out string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil {
		t.Fatalf("last line of output is not JSON: %v\n%s", err, out)
	}
	return m
}
