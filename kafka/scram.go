package kafka

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"

	"github.com/sluicemq/sluice/acl"
	"github.com/sluicemq/sluice/messages"
)

// The server side of a SCRAM login (RFC 5802, RFC 7677): two
// SaslAuthenticate rounds. The first carries the client's user name and
// nonce and is answered with the salt, the iterations and the nonce
// extended by the server's; the second carries the client's proof, which
// is checked against the stored key, and is answered with the server's
// signature. Channel binding is not offered (as in Kafka). A user without
// a password of the mechanism gets a made-up salt and fails at the proof,
// as a wrong password does, so logins do not tell which users exist.

// errSCRAM is every refused SCRAM step: its text is for the log, the
// client is told only that the login failed.
var errSCRAM = errors.New("SCRAM login refused")

// scramLogin is one connection's SCRAM conversation.
type scramLogin struct {
	mech   int32
	h      func() hash.Hash
	lookup func(user string, mech int32) (*messages.ScramCredential, bool)
	// secret makes the salts of users that do not exist (stable per
	// listener, so asking twice gives the same salt).
	secret []byte
	// serverNonce makes the server's part of the nonce.
	serverNonce func() (string, error)

	step            int // 0: expects client-first; 1: client-final; 2: done
	user            string
	cred            *messages.ScramCredential
	known           bool
	gs2Header       string
	clientFirstBare string
	serverFirst     string
	nonce           string
}

func newScramLogin(mech int32, secret []byte, lookup func(string, int32) (*messages.ScramCredential, bool)) *scramLogin {
	return &scramLogin{mech: mech, h: acl.ScramHash(mech), lookup: lookup, secret: secret, serverNonce: randomNonce}
}

func randomNonce() (string, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawStdEncoding.EncodeToString(b[:]), nil
}

// next takes the client's message and returns the server's answer; done
// is set with the user name once the proof is accepted. An error refuses
// the login and ends the conversation.
func (s *scramLogin) next(msg []byte) (reply []byte, done bool, err error) {
	switch s.step {
	case 0:
		s.step = 1
		reply, err = s.clientFirst(string(msg))
	case 1:
		s.step = 2
		reply, err = s.clientFinal(string(msg))
		done = err == nil
	default:
		err = fmt.Errorf("%w: the conversation is over", errSCRAM)
	}
	if err != nil {
		s.step = 2
	}
	return reply, done, err
}

func (s *scramLogin) clientFirst(msg string) ([]byte, error) {
	// gs2-header: cbind-flag "," [ "a=" authzid ] ","
	flag, rest, ok := strings.Cut(msg, ",")
	if !ok {
		return nil, fmt.Errorf("%w: client-first has no GS2 header", errSCRAM)
	}
	switch flag {
	case "n", "y":
	default:
		return nil, fmt.Errorf("%w: channel binding %q is not offered", errSCRAM, flag)
	}
	authzid, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return nil, fmt.Errorf("%w: client-first has no GS2 header", errSCRAM)
	}
	s.gs2Header = flag + "," + authzid + ","
	s.clientFirstBare = bare
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") {
		return nil, fmt.Errorf("%w: client-first-bare is not n=USER,r=NONCE", errSCRAM)
	}
	user, err := saslName(attrs[0][2:])
	if err != nil {
		return nil, err
	}
	if authzid != "" {
		az, err := saslName(strings.TrimPrefix(authzid, "a="))
		if err != nil || !strings.HasPrefix(authzid, "a=") || az != user {
			return nil, fmt.Errorf("%w: authorization id %q is not the user %q", errSCRAM, authzid, user)
		}
	}
	clientNonce := attrs[1][2:]
	if clientNonce == "" || !printable(clientNonce) {
		return nil, fmt.Errorf("%w: the client nonce is empty or not printable", errSCRAM)
	}
	for _, ext := range attrs[2:] {
		if strings.HasPrefix(ext, "tokenauth=") && ext != "tokenauth=false" {
			return nil, fmt.Errorf("%w: delegation tokens are not supported", errSCRAM)
		}
	}
	s.user = user
	s.cred, s.known = s.lookup(user, s.mech)
	if !s.known {
		s.cred = s.madeUp(user)
	}
	serverNonce, err := s.serverNonce()
	if err != nil {
		return nil, err
	}
	s.nonce = clientNonce + serverNonce
	s.serverFirst = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(s.cred.Salt) + ",i=" + strconv.Itoa(int(s.cred.Iterations))
	return []byte(s.serverFirst), nil
}

func (s *scramLogin) clientFinal(msg string) ([]byte, error) {
	withoutProof, proof64, ok := strings.Cut(msg, ",p=")
	if !ok || strings.Contains(proof64, ",") {
		return nil, fmt.Errorf("%w: client-final has no proof at its end", errSCRAM)
	}
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || attrs[0] != "c="+base64.StdEncoding.EncodeToString([]byte(s.gs2Header)) {
		return nil, fmt.Errorf("%w: client-final's channel binding is not its GS2 header", errSCRAM)
	}
	// The nonce must end with the server's (as Kafka checks it):
	// librdkafka sends its own nonce before the whole of the server's.
	if !strings.HasPrefix(attrs[1], "r=") || !strings.HasSuffix(attrs[1], s.nonce) {
		return nil, fmt.Errorf("%w: client-final's nonce does not end with the server's", errSCRAM)
	}
	proof, err := base64.StdEncoding.DecodeString(proof64)
	if err != nil || len(proof) != s.h().Size() {
		return nil, fmt.Errorf("%w: the proof is not %d bytes of base64", errSCRAM, s.h().Size())
	}
	authMessage := []byte(s.clientFirstBare + "," + s.serverFirst + "," + withoutProof)
	clientKey := acl.ScramHMAC(s.h, s.cred.StoredKey, authMessage)
	subtle.XORBytes(clientKey, clientKey, proof)
	stored := s.h()
	stored.Write(clientKey)
	if subtle.ConstantTimeCompare(stored.Sum(nil), s.cred.StoredKey) != 1 || !s.known {
		return nil, fmt.Errorf("%w: wrong password for user %q", errSCRAM, s.user)
	}
	signature := acl.ScramHMAC(s.h, s.cred.ServerKey, authMessage)
	return []byte("v=" + base64.StdEncoding.EncodeToString(signature)), nil
}

// madeUp is the credential shown for a user without a password: a salt
// that is the same each time the user is asked for, keys nobody has.
func (s *scramLogin) madeUp(user string) *messages.ScramCredential {
	mac := hmac.New(s.h, s.secret)
	mac.Write([]byte(user))
	sum := mac.Sum(nil)
	return &messages.ScramCredential{Mechanism: s.mech, Iterations: acl.MinScramIterations, Salt: sum[:24],
		StoredKey: make([]byte, s.h().Size()), ServerKey: make([]byte, s.h().Size())}
}

// saslName decodes a SCRAM user name: "=2C" is ',' and "=3D" is '='.
func saslName(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] != '=':
			b.WriteByte(s[i])
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
			i += 2
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
			i += 2
		default:
			return "", fmt.Errorf("%w: the user name has a bare '='", errSCRAM)
		}
	}
	if b.Len() == 0 {
		return "", fmt.Errorf("%w: the user name is empty", errSCRAM)
	}
	return b.String(), nil
}

// printable is RFC 5802's printable: ASCII 0x21..0x7e but ','.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e || s[i] == ',' {
			return false
		}
	}
	return true
}
