package jwks

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/internal/testlog"
)

// TestFileIssuerCountersAndLog: for a jwks_file issuer, fetches count reads
// and errors failed ones (a poll that finds nothing changed is neither), a
// missing file is logged once with its path and again only on change, and
// the set's age runs from the last poll that confirmed a good file.
func TestFileIssuerCountersAndLog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		file := filepath.Join(dir, "keys.json")
		buf := new(testlog.Buffer)
		clk := newBubbleClock()
		const poll = time.Second
		f, d := startFetcher(t, clk, Options{
			Issuer: "https://file.test/", File: file, FilePollInterval: poll,
			Logger: slog.New(slog.NewJSONHandler(buf, nil)),
		})
		failedLines := func() []map[string]any {
			var out []map[string]any
			for _, l := range testlog.Lines(t, buf) {
				if l["msg"] == "jwks fetch failed" {
					out = append(out, l)
				}
			}
			return out
		}
		type counts struct{ fetches, errors uint64 }
		check := func(step string, want counts, wantFailedLines int) {
			t.Helper()
			if s := f.Stats(); s.Fetches != want.fetches || s.Errors != want.errors {
				t.Errorf("%s: fetches %d, errors %d; want %d, %d", step, s.Fetches, s.Errors, want.fetches, want.errors)
			}
			if got := failedLines(); len(got) != wantFailedLines {
				t.Errorf("%s: %d \"jwks fetch failed\" lines, want %d: %v", step, len(got), wantFailedLines, got)
			}
		}

		for range 5 { // missing at start, polled five more times
			d = clk.step(t, d)
		}
		check("missing", counts{1, 1}, 1)
		if l := failedLines()[0]; !strings.Contains(l["err"].(string), file) {
			t.Errorf("missing file line %v, want its path", l)
		}
		if st := f.Keys().Status(); st.ConsecutiveFailures != 6 {
			t.Errorf("missing: consecutive failures %d, want 6 (every poll)", st.ConsecutiveFailures)
		}

		if err := os.WriteFile(file, testkeys.JWKS(keyA), 0o600); err != nil {
			t.Fatal(err)
		}
		d = clk.step(t, d)
		for range 5 {
			d = clk.step(t, d)
			if set := f.Keys().Load(); !set.FetchedAt.Equal(clk.Now()) {
				t.Fatalf("good file: FetchedAt %v, want the poll that confirmed it (%v)", set.FetchedAt, clk.Now())
			}
		}
		check("good", counts{2, 1}, 1)
		confirmed := clk.Now()

		if err := os.Remove(file); err != nil {
			t.Fatal(err)
		}
		for range 5 {
			d = clk.step(t, d)
		}
		check("removed", counts{3, 2}, 2)
		if set := f.Keys().Load(); !set.FetchedAt.Equal(confirmed) || set.Len() != 1 {
			t.Errorf("removed: FetchedAt %v with %d keys, want the last confirmation %v and the last good keys", set.FetchedAt, set.Len(), confirmed)
		}

		if err := os.WriteFile(file, []byte(`{"keys":`), 0o600); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			d = clk.step(t, d)
		}
		check("bad", counts{4, 3}, 3)
	})
}
