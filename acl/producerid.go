package acl

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"

	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
)

// Producer ids bound to their owner. On a broker with principals, the id
// handed to an idempotent producer carries, in its low 32 bits, a MAC of
// its sequence number and the principal that asked for it, keyed with
// the cluster's producer id key (in the security record). Any broker can
// then tell, from the id alone, whether a batch or an epoch bump comes
// from the principal the id belongs to; another principal cannot use it,
// nor guess the next one.
//
//	id = seq << 32 | first 4 bytes of HMAC-SHA256(key, seq, principal)

// ProducerIDKeyBytes is the size of the cluster's producer id key.
const ProducerIDKeyBytes = 32

// MaxProducerIDSeq is the largest sequence number an id can carry.
const MaxProducerIDSeq = 1<<31 - 1

// ErrNoProducerIDKey is returned while the broker has not yet read the
// cluster's producer id key.
var ErrNoProducerIDKey = errors.New("the cluster's producer id key is not known yet")

// WithProducerIDKey returns rec with a new random producer id key, or rec
// itself (and false) when it has one.
func WithProducerIDKey(rec *messages.SecurityRecord) (*messages.SecurityRecord, bool) {
	if rec != nil && len(rec.ProducerIdKey) == ProducerIDKeyBytes {
		return rec, false
	}
	next := &messages.SecurityRecord{}
	if rec != nil {
		next = proto.CloneOf(rec)
	}
	next.ProducerIdKey = make([]byte, ProducerIDKeyBytes)
	_, _ = rand.Read(next.ProducerIdKey)
	return next, true
}

// ProducerIDs issues and checks bound producer ids with the key it was
// last given. Safe for concurrent use.
type ProducerIDs struct {
	key atomic.Pointer[[]byte]
}

// SetKey takes the security record's key (ignored unless it has the
// right size).
func (p *ProducerIDs) SetKey(key []byte) {
	if len(key) == ProducerIDKeyBytes {
		k := append([]byte(nil), key...)
		p.key.Store(&k)
	}
}

func (p *ProducerIDs) mac(seq int64, principal string) (uint32, error) {
	k := p.key.Load()
	if k == nil {
		return 0, ErrNoProducerIDKey
	}
	m := hmac.New(sha256.New, *k)
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(seq))
	m.Write([]byte("sluice producer id\x00"))
	m.Write(b[:])
	m.Write([]byte(principal))
	return binary.BigEndian.Uint32(m.Sum(nil)), nil
}

// Issue returns the id of sequence number seq (1 to MaxProducerIDSeq) for
// principal.
func (p *ProducerIDs) Issue(seq int64, principal string) (int64, error) {
	if seq < 1 || seq > MaxProducerIDSeq {
		return -1, fmt.Errorf("producer id sequence %d: want 1 to %d", seq, MaxProducerIDSeq)
	}
	tag, err := p.mac(seq, principal)
	if err != nil {
		return -1, err
	}
	return seq<<32 | int64(tag), nil
}

// Owns reports whether id was issued to principal.
func (p *ProducerIDs) Owns(id int64, principal string) (bool, error) {
	seq := id >> 32
	if id < 0 || seq < 1 {
		return false, nil
	}
	tag, err := p.mac(seq, principal)
	if err != nil {
		return false, err
	}
	return hmac.Equal(binary.BigEndian.AppendUint32(nil, uint32(id)), binary.BigEndian.AppendUint32(nil, tag)), nil
}
