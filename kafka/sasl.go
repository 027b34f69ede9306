package kafka

import (
	"bytes"
	"cmp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/acl"
	"github.com/sluicemq/sluice/messages"
)

// SASL logins on the Kafka listener (SASL_SSL): SaslHandshake (key 17,
// v1: the client then sends SaslAuthenticate requests, not raw bytes) and
// SaslAuthenticate (key 36, v0–2) with PLAIN, whose password is the token
// `sluice user create` made for the user, or SCRAM-SHA-256/512 with a
// password `sluice user password` or AlterUserScramCredentials set
// (scram.go). Until a
// connection has logged in (or presented a client certificate) it may
// send only these and ApiVersions. A refused login is answered
// SASL_AUTHENTICATION_FAILED after a delay, without saying which part was
// wrong, and the connection is closed; refusals are counted in
// sluice_kafka_login_failures_total and logged. The delay grows with the
// refusals of the same source address in the last minute (failedLoginDelay
// each, at most maxLoginDelay), and the delays of one address run one
// after another, so a guesser opening many connections at once is slowed
// as one opening them in turn.

const (
	mechanismPLAIN       = "PLAIN"
	mechanismOAuthBearer = "OAUTHBEARER"
	// failedLoginDelay slows guessing down (Kafka's
	// connection.failed.authentication.delay.ms), growing per source up
	// to maxLoginDelay (Config.FailedLoginDelay, MaxFailedLoginDelay).
	failedLoginDelay = time.Second
	maxLoginDelay    = 10 * time.Second
	// maxLoginFrameBytes bounds a frame before the login (Kafka's
	// sasl.server.max.receive.size).
	maxLoginFrameBytes = 512 << 10
	// errUnsupportedSASLMechanism and errIllegalSASLState are Kafka's.
	errUnsupportedSASLMechanism int16 = 33
	errIllegalSASLState         int16 = 34
)

// beforeLogin are the requests a connection may send before its login.
var beforeLogin = map[int16]bool{
	kmsg.ApiVersions.Int16():      true,
	kmsg.SASLHandshake.Int16():    true,
	kmsg.SASLAuthenticate.Int16(): true,
}

func handleSaslHandshake(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.SASLHandshakeRequest)
	resp := kmsg.NewPtrSASLHandshakeResponse()
	c := r.conn
	resp.SupportedMechanisms = c.srv.mechanisms()
	switch {
	case h.version == 0:
		// v0 would be followed by raw SASL bytes, which this listener
		// does not read; clients since Kafka 1.0 send v1.
		resp.ErrorCode = errUnsupportedVersion
	case !c.srv.cfg.SASL:
		resp.ErrorCode = errIllegalSASLState // no SASL on this listener
	case c.loggedIn && c.canRelogin(req.Mechanism):
		c.relogin = true
		c.scram = nil
		if mech, ok := acl.ScramMechanismOf(req.Mechanism); ok {
			c.scram = newScramLogin(mech, c.srv.scramSecret, c.srv.cfg.Scram)
		}
	case c.loggedIn || c.mechanism != "":
		resp.ErrorCode = errIllegalSASLState
	case !slices.Contains(resp.SupportedMechanisms, req.Mechanism):
		resp.ErrorCode = errUnsupportedSASLMechanism
	default:
		c.mechanism = req.Mechanism
		if mech, ok := acl.ScramMechanismOf(req.Mechanism); ok {
			c.scram = newScramLogin(mech, c.srv.scramSecret, c.srv.cfg.Scram)
		}
	}
	return func() kmsg.Response { return resp }
}

// canRelogin reports whether a logged-in connection may log in again
// with mechanism (KIP-368): when its session ends, it logged in with SASL,
// is not logging in again already, and keeps its mechanism, as Kafka
// requires.
func (c *conn) canRelogin(mechanism string) bool {
	return !c.sessionEnds.IsZero() && c.mechanism != "" && !c.relogin && mechanism == c.mechanism
}

// mechanisms are the SASL mechanisms the listener offers.
func (s *Server) mechanisms() []string {
	var m []string
	if s.cfg.Login != nil {
		m = append(m, mechanismPLAIN)
	}
	if s.cfg.OAuth != nil {
		m = append(m, mechanismOAuthBearer)
	}
	if s.cfg.Scram != nil {
		m = append(m, acl.ScramMechanismName(acl.ScramSHA256), acl.ScramMechanismName(acl.ScramSHA512))
	}
	return m
}

func handleSaslAuthenticate(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.SASLAuthenticateRequest)
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	c := r.conn
	if (c.loggedIn && !c.relogin) || c.mechanism == "" {
		resp.ErrorCode = errIllegalSASLState
		resp.ErrorMessage = kmsg.StringPtr("SaslAuthenticate needs a SaslHandshake first")
		c.failedLogin = c.srv.cfg.SASL
		return func() kmsg.Response { return resp }
	}
	if c.scram != nil {
		reply, done, err := c.scram.next(req.SASLAuthBytes)
		switch {
		case err != nil:
			return c.refuseLogin(resp, c.scram.user, err.Error())
		case done:
			if refused := c.loggedInAs("User:"+c.scram.user, time.Time{}, h, resp); refused != nil {
				return refused
			}
		}
		resp.SASLAuthBytes = reply
		return func() kmsg.Response { return resp }
	}
	if c.mechanism == mechanismOAuthBearer {
		token, authzid, ok := parseOAuthBearer(req.SASLAuthBytes)
		if !ok {
			return c.refuseLogin(resp, "", "not an OAUTHBEARER client response (RFC 7628)")
		}
		principal, expires, err := c.srv.cfg.OAuth(token)
		switch {
		case err != nil:
			return c.refuseLogin(resp, authzid, err.Error())
		case authzid != "" && "User:"+authzid != principal:
			return c.refuseLogin(resp, authzid, "the authorization id is not the token's subject")
		}
		if refused := c.loggedInAs(principal, expires, h, resp); refused != nil {
			return refused
		}
		return func() kmsg.Response { return resp }
	}
	user, password, ok := parsePlain(req.SASLAuthBytes)
	principal := ""
	if ok && c.srv.cfg.Login != nil {
		principal, ok = c.srv.cfg.Login(user, password)
	}
	if !ok || principal == "" {
		return c.refuseLogin(resp, user, "wrong user name or token")
	}
	if refused := c.loggedInAs(principal, time.Time{}, h, resp); refused != nil {
		return refused
	}
	return func() kmsg.Response { return resp }
}

// loggedInAs completes a login as principal whose credential is good
// until credentialEnds (zero: no end): the session ends at the first of
// that and SessionLifetime from now, which the answer (v1+) tells the
// client so that it logs in again in time. A login again may not change
// the principal (as in Kafka): that is refused, and returned.
func (c *conn) loggedInAs(principal string, credentialEnds time.Time, h header, resp *kmsg.SASLAuthenticateResponse) (refused func() kmsg.Response) {
	if c.relogin && principal != c.caller.Principal {
		return c.refuseLogin(resp, principal, "a login again as another principal than "+c.caller.Principal)
	}
	if !c.loggedIn {
		c.caller.Principal, c.loggedIn = principal, true
	}
	c.relogin = false
	now := time.Now()
	ends := credentialEnds
	if lifetime := c.srv.sessionLifetime(); lifetime > 0 && (ends.IsZero() || now.Add(lifetime).Before(ends)) {
		ends = now.Add(lifetime)
	}
	c.sessionEnds = ends
	if !ends.IsZero() && h.version >= 1 {
		resp.SessionLifetimeMillis = max(ends.Sub(now).Milliseconds(), 1)
	}
	return nil
}

// refuseLogin answers a refused login after the delay of its source,
// logs it and has the connection closed after the answer. The client is
// told only that the login failed; why is for the log.
func (c *conn) refuseLogin(resp *kmsg.SASLAuthenticateResponse, user, why string) func() kmsg.Response {
	c.failedLogin = true
	resp.ErrorCode = int16(messages.ErrorCode_SASL_AUTHENTICATION_FAILED)
	resp.ErrorMessage = kmsg.StringPtr("authentication failed: wrong user name or password")
	delay, recent := c.srv.failedLogins.failed(c.ip, time.Now())
	c.srv.cfg.Metrics.KafkaLoginFailed(c.mechanism)
	c.srv.logSpaced("kafka SASL login refused", "remote", c.nc.RemoteAddr().String(), "mechanism", c.mechanism, "user", user,
		"reason", why, "refusals_from_address_last_minute", recent, "delay", delay)
	return func() kmsg.Response {
		time.Sleep(delay)
		return resp
	}
}

// parsePlain splits a PLAIN message (RFC 4616): [authzid] NUL authcid NUL
// passwd. An authzid other than the user is refused: a user logs in as
// itself only.
func parsePlain(b []byte) (user, password string, ok bool) {
	parts := bytes.Split(b, []byte{0})
	if len(parts) != 3 || len(parts[1]) == 0 || len(parts[2]) == 0 {
		return "", "", false
	}
	if len(parts[0]) > 0 && !bytes.Equal(parts[0], parts[1]) {
		return "", "", false
	}
	return string(parts[1]), string(parts[2]), true
}

// loginFailures counts refused logins per source address over the last
// minute and queues their answers; it holds at most maxLoginSources
// addresses (stale ones go first).
type loginFailures struct {
	// step and most are the delay per recent refusal and its bound.
	step, most time.Duration
	mu         sync.Mutex
	sources    map[string]*loginSource
}

type loginSource struct {
	n    int
	last time.Time
	// until is when the address's last refused login is answered: the
	// next one waits for it, then for its own delay.
	until time.Time
}

const maxLoginSources = 4096

// failed records a refused login from ip at now and returns how long its
// answer waits (behind the address's answers still waiting) and the
// refusals from ip in the last minute.
func (f *loginFailures) failed(ip string, now time.Time) (time.Duration, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sources == nil {
		f.sources = map[string]*loginSource{}
	}
	if len(f.sources) >= maxLoginSources {
		for k, s := range f.sources {
			if now.Sub(s.last) > time.Minute {
				delete(f.sources, k)
			}
		}
	}
	s := f.sources[ip]
	if s == nil || now.Sub(s.last) > time.Minute {
		s = &loginSource{}
		if len(f.sources) < maxLoginSources {
			f.sources[ip] = s
		}
	}
	s.n++
	s.last = now
	step, most := cmp.Or(f.step, failedLoginDelay), cmp.Or(f.most, maxLoginDelay)
	if s.until.Before(now) {
		s.until = now
	}
	s.until = s.until.Add(min(time.Duration(s.n)*step, most))
	return s.until.Sub(now), s.n
}

// parseOAuthBearer reads an OAUTHBEARER client response (RFC 7628 3.1):
// gs2-header %x01 *(key=value %x01) %x01, with auth=Bearer TOKEN among the
// pairs; authzid is the gs2 header's a= (empty: none).
func parseOAuthBearer(b []byte) (token, authzid string, ok bool) {
	s := string(b)
	flag, rest, found := strings.Cut(s, ",")
	if !found || (flag != "n" && flag != "y") {
		return "", "", false
	}
	az, rest, found := strings.Cut(rest, ",")
	if !found || (az != "" && !strings.HasPrefix(az, "a=")) || !strings.HasPrefix(rest, "\x01") || !strings.HasSuffix(rest, "\x01\x01") {
		return "", "", false
	}
	for _, kv := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(rest, "\x01"), "\x01\x01"), "\x01") {
		if v, isAuth := strings.CutPrefix(kv, "auth="); isAuth {
			scheme, t, found := strings.Cut(v, " ")
			if !found || !strings.EqualFold(scheme, "Bearer") || t == "" {
				return "", "", false
			}
			token = t
		}
	}
	return token, strings.TrimPrefix(az, "a="), token != ""
}
