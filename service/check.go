package service

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/redisconn"
	"github.com/jwksverify/jwksverify/replay"
	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/server/metrics"
)

// Check builds what [New] builds of plan and starts nothing: every option
// each package refuses (jwks, introspect, verify, dpop, server, metrics),
// the local files the service reads at start (each issuer's ca_file, the
// introspection clients' files, a state_dir it could not create, the
// memory revocation store's log, read without its lock), with no
// fetch, no connection and no goroutine left behind. Keys are not read:
// an issuer's key source is checked as options only. The error joins one
// error per problem (errors.Join; Unwrap() []error lists them); nil means
// New would build the service.
func Check(plan *config.Plan, o Options) error {
	if plan == nil {
		return errNoPlan
	}
	s := &Service{opts: o.withDefaults(), stop: make(chan struct{})}
	if plan.Redis != nil {
		// Built to read its files, never dialled (New connects nothing).
		c, err := redisconn.New(*plan.Redis)
		if err != nil {
			return err
		}
		defer c.Close()
		s.redis, s.redisOpts, s.replayClient = c, *plan.Redis, c
	}
	if plan.DPoP != nil {
		// A store of this one check: the configured one is never dialled.
		m, err := replay.NewMemory(1)
		if err != nil {
			return err
		}
		s.replayPlan, s.replayStore = plan.DPoP, m
	}
	b := &builder{s: s, check: true}
	problems := func(err error) error {
		return errors.Join(append(b.problems, err)...)
	}
	if err := checkStateDir(plan); err != nil {
		b.problems = append(b.problems, err)
	}
	if r := plan.Revocation; r != nil && r.Store != "redis" {
		// New reads the memory store's log at start: a line that does not
		// decode fails it.
		if err := revoke.CheckMemory(revoke.MemoryOptions{Dir: r.StateDir, Retention: r.Retention}); err != nil {
			b.problems = append(b.problems, fmt.Errorf("revocation: %w", err))
		}
	}
	g, err := b.build(plan)
	if err != nil {
		return problems(err)
	}
	defer closeClients(b.freshClients)
	if g.minter != nil {
		defer g.minter.Close()
	}
	if _, err := metrics.New(metrics.Options{Verifier: g.server.Verifier(), Version: o.Version, Revision: o.Revision, Policies: plan.Server.Policies}); err != nil {
		return problems(err)
	}
	return problems(nil)
}

// checkStateDir reports a state_dir that the fetchers could not create or
// use: one that is not a directory, or whose nearest existing ancestor is
// not.
func checkStateDir(plan *config.Plan) error {
	dir := ""
	for _, is := range plan.Issuers {
		if is.JWKS.StateDir != "" {
			dir = is.JWKS.StateDir
		}
	}
	if dir == "" {
		return nil
	}
	for p := dir; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist) && p != filepath.Dir(p):
			continue // the fetchers create it
		case err != nil:
			return fmt.Errorf("state_dir %s: %w", dir, err)
		case !fi.IsDir():
			return fmt.Errorf("state_dir %s: %s is not a directory", dir, p)
		}
		return nil
	}
}
