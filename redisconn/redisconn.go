// Package redisconn builds the one Redis client that every part of
// jwksverify which shares state between replicas uses (the DPoP replay
// store, revocations, logout and SET jtis, the shared introspection cache):
// a go-redis [redis.UniversalClient] for a single server (a redis:// or
// rediss:// URL), a Sentinel-watched master, or a Cluster, with an ACL user,
// password files reread when they change, and TLS with a CA file and
// client certificates.
//
// The client follows a Sentinel failover (go-redis asks the sentinels for
// the new master and drops the connections to the old one) and a Cluster's
// slot moves (MOVED and ASK redirects) without a restart. Calls are never
// retried on a network error: a write whose reply was lost may have been
// applied, and a caller that needs to know fails closed instead.
//
// [Client.Write] runs writes on the master that owns a key and, with
// AcknowledgeReplicas, waits (WAIT) until that many replicas hold them
// before it reports success: a failover after that loses nothing that was
// acknowledged. Fewer replicas is [ErrNotReplicated], a failure.
package redisconn

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jwksverify/jwksverify/internal/asciifold"
)

// Defaults and bounds of [Options] (zero still means the default).
const (
	DefaultTimeout         = 200 * time.Millisecond
	MinTimeout             = time.Millisecond
	MaxTimeout             = 30 * time.Second
	MaxPoolSize            = 10000
	MaxAcknowledgeReplicas = 100
	// MaxPasswordBytes bounds a password file.
	MaxPasswordBytes = 4096
)

// clusterStateReloadInterval is how old a Cluster's slot map may be before
// a call reads it again (in the background): a promoted replica is found
// within about this long.
const clusterStateReloadInterval = time.Second

// Options configure a [Client]. Exactly one of URL, Sentinel and Cluster
// says where Redis is. Options hold file names, never secrets, except a
// password written into URL: never log URL.
type Options struct {
	// URL is a single server: redis://[user:password@]host:port[/db], or
	// rediss:// for TLS. Empty means Sentinel or Cluster.
	URL string
	// Sentinel names the master that sentinels watch.
	Sentinel Sentinel
	// Cluster lists seed nodes of a Redis Cluster.
	Cluster Cluster
	// Username is the ACL user (AUTH username password); empty means the
	// default user. It needs PasswordFile, and a URL without a user.
	Username string
	// PasswordFile holds the password of Username (a trailing newline is
	// not part of it). It is read when a connection is made and read again
	// when its size or modification time changed, so that a rotated
	// password is used by the next connection without a restart. Empty
	// means no password (or the one in URL).
	PasswordFile string
	// TLS configures TLS: with a URL it needs rediss://; with Sentinel or
	// Cluster setting CAFile or CertFile turns TLS on (to the sentinels
	// too).
	TLS TLS
	// Timeout bounds each call as a whole: the wait for a pooled
	// connection, dialing, the write, the read and a WAIT together:
	// [MinTimeout, MaxTimeout]. Zero means [DefaultTimeout].
	Timeout time.Duration
	// PoolSize is the most connections kept open per node, at most
	// [MaxPoolSize]. Zero means go-redis's default (10 per CPU).
	PoolSize int
	// AcknowledgeReplicas, when above zero, makes [Client.Write] wait
	// (WAIT) until that many replicas hold a write before it succeeds, at
	// most [MaxAcknowledgeReplicas]. Zero means a write is acknowledged
	// once the master has it (a failover right after may lose it).
	AcknowledgeReplicas int
}

// Sentinel is a master watched by Redis Sentinel.
type Sentinel struct {
	// Master is the name the sentinels know the master by.
	Master string
	// Addrs are the sentinels, host:port each.
	Addrs []string
	// PasswordFile holds the sentinels' password (requirepass in
	// sentinel.conf); empty means none. It is read when the client is
	// built: a rotation takes a configuration reload that changes the
	// client (or a restart).
	PasswordFile string
}

// Cluster is a Redis Cluster.
type Cluster struct {
	// Addrs are some of its nodes, host:port each; the client learns the
	// others from them.
	Addrs []string
}

// TLS names the files of a TLS connection to Redis. Every file is read
// when the client is built; the client certificate and key again when
// either file changes.
type TLS struct {
	// CAFile holds the PEM certificates that verify the server; empty means
	// the system roots.
	CAFile string
	// CertFile and KeyFile are the client certificate and its key (PEM),
	// both or neither.
	CertFile, KeyFile string
}

// on reports whether any file of t is set.
func (t TLS) on() bool { return t != TLS{} }

// Mode says where Redis is: "url", "sentinel", "cluster", or "" for none.
func (o Options) Mode() string {
	switch {
	case o.URL != "":
		return "url"
	case o.Sentinel.Master != "" || len(o.Sentinel.Addrs) > 0:
		return "sentinel"
	case len(o.Cluster.Addrs) > 0:
		return "cluster"
	}
	return ""
}

// LongestWait is the longest one call of a [Client] built from o blocks:
// its Timeout, zero meaning [DefaultTimeout]. A server's request timeouts
// must not be shorter.
func (o Options) LongestWait() time.Duration { return cmp.Or(o.Timeout, DefaultTimeout) }

// Same reports whether a [Client] built from a is one built from b would
// be, so that a configuration reload may keep the client (its connections).
func Same(a, b Options) bool {
	return a.URL == b.URL && a.Sentinel.Master == b.Sentinel.Master && slices.Equal(a.Sentinel.Addrs, b.Sentinel.Addrs) &&
		a.Sentinel.PasswordFile == b.Sentinel.PasswordFile && slices.Equal(a.Cluster.Addrs, b.Cluster.Addrs) &&
		a.Username == b.Username && a.PasswordFile == b.PasswordFile && a.TLS == b.TLS &&
		a.Timeout == b.Timeout && a.PoolSize == b.PoolSize && a.AcknowledgeReplicas == b.AcknowledgeReplicas
}

// CheckURL reports whether url is a Redis URL that [New] accepts. Its
// message never holds the URL (which may hold a password).
func CheckURL(url string) error {
	if url == "" {
		return errors.New("empty; want redis://[user:password@]host:port[/db] or rediss://…")
	}
	if _, err := redis.ParseURL(url); err != nil {
		return errors.New("not redis://[user:password@]host:port[/db] or rediss://… (the URL is not repeated here: it may hold a password)")
	}
	return nil
}

// CheckOptions reports whether [New] accepts o, reading no file: an error
// wrapping [ErrInvalidOptions] that names the field first if not.
func CheckOptions(o Options) error {
	switch {
	case o.Timeout != 0 && (o.Timeout < MinTimeout || o.Timeout > MaxTimeout):
		return invalidOption("Timeout", "%s is out of range [%s, %s]", o.Timeout, MinTimeout, MaxTimeout)
	case o.PoolSize < 0 || o.PoolSize > MaxPoolSize:
		return invalidOption("PoolSize", "%d is out of range [1, %d]", o.PoolSize, MaxPoolSize)
	case o.AcknowledgeReplicas < 0 || o.AcknowledgeReplicas > MaxAcknowledgeReplicas:
		return invalidOption("AcknowledgeReplicas", "%d is out of range [0, %d]", o.AcknowledgeReplicas, MaxAcknowledgeReplicas)
	case (o.TLS.CertFile == "") != (o.TLS.KeyFile == ""):
		if o.TLS.CertFile == "" {
			return invalidOption("TLS.CertFile", "empty, and TLS.KeyFile is set; set both or neither")
		}
		return invalidOption("TLS.KeyFile", "empty, and TLS.CertFile is set; set both or neither")
	case o.Username != "" && o.PasswordFile == "":
		return invalidOption("Username", "set without PasswordFile; an ACL user needs a password")
	}
	set := 0
	for _, on := range []bool{o.URL != "", o.Sentinel.Master != "" || len(o.Sentinel.Addrs) > 0 || o.Sentinel.PasswordFile != "", len(o.Cluster.Addrs) > 0} {
		if on {
			set++
		}
	}
	switch {
	case set == 0:
		return invalidOption("URL", "empty, and neither Sentinel nor Cluster is set; set one of them")
	case set > 1:
		return invalidOption("", "more than one of URL, Sentinel and Cluster is set; set one")
	}
	switch o.Mode() {
	case "url":
		return checkURLMode(o)
	case "sentinel":
		if o.Sentinel.Master == "" {
			return invalidOption("Sentinel.Master", "empty; name the master the sentinels watch")
		}
		if len(o.Sentinel.Addrs) == 0 {
			return invalidOption("Sentinel.Addrs", "empty; list the sentinels, host:port each")
		}
		return checkAddrs("Sentinel.Addrs", o.Sentinel.Addrs)
	default:
		return checkAddrs("Cluster.Addrs", o.Cluster.Addrs)
	}
}

// checkURLMode checks the options of a single server at o.URL.
func checkURLMode(o Options) error {
	if err := CheckURL(o.URL); err != nil {
		return invalidOption("URL", "%w", err)
	}
	u, err := url.Parse(o.URL)
	if err != nil {
		return invalidOption("URL", "not a URL (the URL is not repeated here: it may hold a password)")
	}
	if u.User != nil && o.Username != "" {
		return invalidOption("Username", "set, and URL names a user too; set one")
	}
	if _, hasPassword := u.User.Password(); hasPassword && o.PasswordFile != "" {
		return invalidOption("PasswordFile", "set, and URL holds a password too; take the password out of URL")
	}
	if o.TLS.on() && u.Scheme != "rediss" {
		return invalidOption("TLS", "set, and URL is %s://; use rediss:// for TLS", u.Scheme)
	}
	return nil
}

// checkAddrs checks that every address of addrs is host:port.
func checkAddrs(field string, addrs []string) error {
	for i, a := range addrs {
		host, port, err := net.SplitHostPort(a)
		if n, perr := strconv.Atoi(port); err != nil || !addrHost(host) || perr != nil || n < 1 || n > 65535 {
			return invalidOption(fmt.Sprintf("%s[%d]", field, i), "%q is not host:port with a port in [1, 65535]", withoutUserInfo(a))
		}
	}
	if i := firstDuplicate(addrs); i >= 0 {
		return invalidOption(fmt.Sprintf("%s[%d]", field, i), "%q is listed twice", withoutUserInfo(addrs[i]))
	}
	return nil
}

// addrHost reports whether host can be a dialled host: an IP address (a
// zone too) or a DNS name, not a URL's scheme and user info pasted before it.
func addrHost(host string) bool {
	if host == "" {
		return false
	}
	for i := 0; i < len(host); i++ {
		switch c := host[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '-', c == '_', c == ':', c == '%':
		default:
			return false
		}
	}
	return true
}

// withoutUserInfo is an address as an error may quote it: a URL pasted
// where host:port belongs (redis://user:password@host:6379) loses what
// precedes its last '@', which may be a password.
func withoutUserInfo(a string) string {
	if i := strings.LastIndexByte(a, '@'); i >= 0 {
		return "…@" + a[i+1:]
	}
	return a
}

func firstDuplicate(s []string) int {
	for i := range s {
		if slices.Contains(s[:i], s[i]) {
			return i
		}
	}
	return -1
}

// Client is a Redis client built from [Options]: a [redis.UniversalClient]
// (a *redis.Client for a URL or a Sentinel master, a *redis.ClusterClient
// for a Cluster) with the options' timeouts, no retries of a call that
// failed on the network, and [Client.Write]. It is safe for concurrent use;
// Close it when done (Close closes its connections).
type Client struct {
	redis.UniversalClient
	timeout  time.Duration
	replicas int

	writes, notReplicated, failed atomic.Uint64

	evict eviction // CheckNoEviction's last reading
}

// Stats are a [Client]'s counters.
type Stats struct {
	// Writes counts the calls of [Client.Write]; NotReplicated those that
	// failed with [ErrNotReplicated].
	Writes, NotReplicated uint64
	// Errors counts the commands and pipelines that failed (a network
	// error, a timeout, an error answer; not redis.Nil, which is an
	// answer), and the calls [Client.CheckNoEviction] refused because
	// Redis may evict keys: during a failover it rises, and the requests
	// behind it got 503.
	Errors uint64
}

// errorHook counts failed commands and pipelines in c.failed.
type errorHook struct{ c *Client }

func (h errorHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h errorHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err != nil && !errors.Is(err, redis.Nil) && !setupProbe(cmd) {
			h.c.failed.Add(1)
		}
		return err
	}
}

// setupProbe reports whether cmd is the CLIENT MAINT_NOTIFICATIONS go-redis
// sends on a new connection in its "auto" mode: a Redis before 8 refuses it,
// go-redis then stops asking and the connection serves. Counted, it made
// redis_errors_total 1 on a healthy Redis, with no request behind it.
func setupProbe(cmd redis.Cmder) bool {
	args := cmd.Args()
	if len(args) < 2 || !asciifold.EqualFold(cmd.Name(), "client") {
		return false
	}
	sub, ok := args[1].(string)
	return ok && asciifold.EqualFold(sub, "maint_notifications")
}

func (h errorHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if firstFailure(cmds, err) != nil {
			h.c.failed.Add(1)
		}
		return err
	}
}

// New returns a Client. It reads the password and TLS files (an error
// names the field of the one it could not read) and does not connect: the
// first call does. It refuses what [CheckOptions] refuses.
func New(o Options) (*Client, error) {
	if err := CheckOptions(o); err != nil {
		return nil, err
	}
	t := o.LongestWait()
	var creds func(context.Context) (string, string, error)
	if o.PasswordFile != "" {
		pf := &passwordFile{path: o.PasswordFile, user: o.Username}
		if _, _, err := pf.credentials(context.Background()); err != nil {
			return nil, invalidOption("PasswordFile", "%w", err)
		}
		creds = pf.credentials
	}
	var tlsConf *tls.Config
	if o.TLS.on() {
		var err error
		if tlsConf, err = o.TLS.config(); err != nil {
			return nil, err
		}
	}
	c := &Client{timeout: t, replicas: o.AcknowledgeReplicas}
	switch o.Mode() {
	case "url":
		ro, _ := redis.ParseURL(o.URL) // checked above
		if ro.TLSConfig != nil && tlsConf != nil {
			tlsConf.ServerName = ro.TLSConfig.ServerName
			ro.TLSConfig = tlsConf
		}
		ro.CredentialsProviderContext = creds
		if creds != nil {
			ro.Username, ro.Password = "", ""
		}
		ro.DialTimeout, ro.ReadTimeout, ro.WriteTimeout, ro.PoolTimeout = t, t, t, t
		ro.ContextTimeoutEnabled, ro.MaxRetries, ro.DisableIdentity = true, -1, true
		ro.PoolSize = cmp.Or(o.PoolSize, ro.PoolSize)
		c.UniversalClient = redis.NewClient(ro)
	case "sentinel":
		var sentinelPassword string
		if o.Sentinel.PasswordFile != "" {
			p, err := readPassword(o.Sentinel.PasswordFile)
			if err != nil {
				return nil, invalidOption("Sentinel.PasswordFile", "%w", err)
			}
			sentinelPassword = p
		}
		c.UniversalClient = redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: o.Sentinel.Master, SentinelAddrs: slices.Clone(o.Sentinel.Addrs), SentinelPassword: sentinelPassword,
			CredentialsProviderContext: creds, TLSConfig: tlsConf,
			DialTimeout: t, ReadTimeout: t, WriteTimeout: t, PoolTimeout: t, PoolSize: o.PoolSize,
			ContextTimeoutEnabled: true, MaxRetries: -1, DisableIdentity: true,
		})
	default:
		c.UniversalClient = redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: slices.Clone(o.Cluster.Addrs), CredentialsProviderContext: creds, TLSConfig: tlsConf,
			DialTimeout: t, ReadTimeout: t, WriteTimeout: t, PoolTimeout: t, PoolSize: o.PoolSize,
			// MOVED and ASK are followed (the command was not run).
			// MaxRetries -1 does not stop go-redis's cluster loop from
			// retrying a command after a network error within the call's
			// deadline: a proof's set-if-absent whose reply was lost is
			// then sent again with its own value, and the replay store
			// reads its own write as fresh (replay.Redis,
			// docs/DECISIONS.md).
			ContextTimeoutEnabled: true, MaxRetries: -1, DisableIdentity: true,
			// The slot map is read again when a call finds it older than
			// this. go-redis reloads it on MOVED, ASK and READONLY only:
			// a master that died answers none of them, so with its 60 s
			// default the calls to the dead master's slots (MasterForKey:
			// Write's WAIT pipeline, the eviction check; the pub/sub
			// connection) failed for up to a minute after its replica was
			// promoted (SPEC: followed within 10 s).
			ClusterStateReloadInterval: clusterStateReloadInterval,
		})
	}
	c.AddHook(errorHook{c})
	return c, nil
}

// Timeout is the bound of one call (Options.Timeout, or its default).
func (c *Client) Timeout() time.Duration { return c.timeout }

// AcknowledgeReplicas is the number of replicas [Client.Write] waits for.
func (c *Client) AcknowledgeReplicas() int { return c.replicas }

// Stats returns the client's counters. It is safe for concurrent use.
func (c *Client) Stats() Stats {
	return Stats{Writes: c.writes.Load(), NotReplicated: c.notReplicated.Load(), Errors: c.failed.Load()}
}

// Write queues, through queue, commands that touch key (or keys in key's
// hash slot: use a hash tag) on a pipeline to the master that holds key,
// and runs them within the client's Timeout; with AcknowledgeReplicas it
// adds a WAIT on the same connection. It returns the commands, to read
// their results, and the first failure: a command's error other than
// [redis.Nil] (an answer, not a failure), a network error, or
// [ErrNotReplicated] (the write may be on the master only: not
// acknowledged). It blocks at most Timeout.
func (c *Client) Write(ctx context.Context, key string, queue func(redis.Pipeliner)) ([]redis.Cmder, error) {
	c.writes.Add(1)
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if c.replicas == 0 {
		cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error { queue(p); return nil })
		return cmds, firstFailure(cmds, err)
	}
	node := redis.Cmdable(c.UniversalClient)
	cc, cluster := c.UniversalClient.(*redis.ClusterClient)
	if cluster {
		// WAIT counts the replicas of the connection's own node: the
		// writes and the WAIT must go down one connection to key's master.
		m, err := cc.MasterForKey(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("redisconn: the master of the key's slot: %w", err)
		}
		node = m
	}
	// The server gives up waiting for replicas within half the budget, so
	// that its answer (how many acknowledged) arrives before the deadline.
	waitMS := max(c.timeout.Milliseconds()/2, 1)
	var wait *redis.Cmd
	cmds, err := node.Pipelined(ctx, func(p redis.Pipeliner) error {
		queue(p)
		wait = p.Do(ctx, "WAIT", c.replicas, waitMS)
		return nil
	})
	if len(cmds) > 0 {
		cmds = cmds[:len(cmds)-1] // the WAIT is read below
	}
	if err := firstFailure(cmds, err); err != nil {
		if cluster && isRedirect(err) {
			// The slot moved: learn where, for the next call. This one
			// fails (closed); a MOVED or ASK write was not applied.
			cc.ReloadState(ctx)
		}
		return cmds, err
	}
	n, err := wait.Int64()
	switch {
	case err != nil:
		return cmds, fmt.Errorf("redisconn: WAIT: %w", err)
	case n < int64(c.replicas):
		c.notReplicated.Add(1)
		return cmds, fmt.Errorf("%w: %d of %d", ErrNotReplicated, n, c.replicas)
	}
	return cmds, nil
}

// firstFailure is the first error of cmds that is not redis.Nil, or err
// (a pipeline's error) when it is not one of theirs.
func firstFailure(cmds []redis.Cmder, err error) error {
	for _, c := range cmds {
		if e := c.Err(); e != nil && !errors.Is(e, redis.Nil) {
			return fmt.Errorf("redisconn: %s: %w", c.Name(), e)
		}
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("redisconn: %w", err)
	}
	return nil
}

// isRedirect reports whether err is a cluster's MOVED or ASK answer.
func isRedirect(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	return strings.HasPrefix(msg, "MOVED ") || strings.HasPrefix(msg, "ASK ")
}
