package acl

import (
	"errors"
	"testing"
)

func TestProducerIDsBound(t *testing.T) {
	var p ProducerIDs
	if _, err := p.Issue(1, "User:alice"); !errors.Is(err, ErrNoProducerIDKey) {
		t.Fatalf("issue without a key: %v", err)
	}
	rec, added := WithProducerIDKey(nil)
	if !added || len(rec.ProducerIdKey) != ProducerIDKeyBytes {
		t.Fatalf("no key added: %v", rec)
	}
	if same, added := WithProducerIDKey(rec); added || same != rec {
		t.Fatal("a record with a key got another")
	}
	p.SetKey(rec.ProducerIdKey)
	var ids []int64
	for seq := int64(1); seq <= 3; seq++ {
		id, err := p.Issue(seq, "User:alice")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		if ok, _ := p.Owns(id, "User:alice"); !ok {
			t.Errorf("alice does not own her id %d", id)
		}
		if ok, _ := p.Owns(id, "User:mallory"); ok {
			t.Errorf("mallory owns alice's id %d", id)
		}
		if ok, _ := p.Owns(id+1, "User:alice"); ok {
			t.Errorf("alice owns %d, one above her id", id+1)
		}
	}
	if ids[1]-ids[0] == ids[2]-ids[1] {
		t.Errorf("ids %v step evenly: the next one can be guessed", ids)
	}
	// Ids of the unbound kind (small numbers) are no one's.
	for _, id := range []int64{-1, 0, 1, 999, 1<<32 - 1} {
		if ok, _ := p.Owns(id, "User:alice"); ok {
			t.Errorf("alice owns %d", id)
		}
	}
	// Another key: the same id is no longer alice's.
	other, _ := WithProducerIDKey(nil)
	var q ProducerIDs
	q.SetKey(other.ProducerIdKey)
	if ok, _ := q.Owns(ids[0], "User:alice"); ok {
		t.Error("an id checks under another cluster's key")
	}
	if _, err := p.Issue(MaxProducerIDSeq+1, "User:alice"); err == nil {
		t.Error("a sequence number above the limit was issued")
	}
}
