package revoke_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/jwksverify/jwksverify/revoke"
)

// A memory store in a directory: an entry naming a session is stored
// (written and fsync'd) before Add returns, and every token of that
// session is revoked from then on, while the store's index answers the
// request path without a lock or an allocation.
func ExampleMemory() {
	dir, _ := os.MkdirTemp("", "revocations")
	defer os.RemoveAll(dir)
	st, err := revoke.OpenMemory(revoke.MemoryOptions{Dir: dir, Retention: 24 * time.Hour})
	if err != nil {
		panic(err)
	}
	defer st.Close()
	e, err := st.Add(context.Background(), revoke.Entry{
		Issuer: "https://login.example.com/", Kind: revoke.KindSID, Value: "session-42", Source: revoke.SourceAdmin,
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(e.Kind, e.Value, e.ExpiresAt.Sub(e.CreatedAt))

	tok := &revoke.Token{Sub: "alice", SID: "session-42", IssuedAt: time.Now().Add(-time.Minute)}
	fmt.Println(st.Index().Check("https://login.example.com/", tok, time.Now()))
	tok.SID = "session-43"
	fmt.Println(st.Index().Check("https://login.example.com/", tok, time.Now()))
	// Output:
	// sid session-42 24h20m0s
	// revoke: revoked
	// <nil>
}
