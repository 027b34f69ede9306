package storage

import "testing"

func TestEpochAt(t *testing.T) {
	epochs := []EpochStart{{Epoch: 0, StartOffset: 10}, {Epoch: 3, StartOffset: 25}, {Epoch: 4, StartOffset: 40}}
	for _, c := range []struct {
		offset int64
		epoch  int32
		ok     bool
	}{{5, -1, false}, {10, 0, true}, {24, 0, true}, {25, 3, true}, {39, 3, true}, {40, 4, true}, {1000, 4, true}} {
		if e, ok := EpochAt(epochs, c.offset); e != c.epoch || ok != c.ok {
			t.Errorf("EpochAt(%d) = %d, %v; want %d, %v", c.offset, e, ok, c.epoch, c.ok)
		}
	}
	if e, ok := EpochAt(nil, 0); e != -1 || ok {
		t.Errorf("EpochAt of no epochs = %d, %v", e, ok)
	}
}
