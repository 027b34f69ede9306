package acl

import (
	"testing"
)

func TestMatches(t *testing.T) {
	bindings := acls(
		"User:alice ALLOW READ topic:orders literal *",       // 0
		"User:alice ALLOW READ topic:* literal *",            // 1
		"User:alice ALLOW WRITE topic:ord prefixed *",        // 2
		"User:alice ALLOW WRITE topic:orders2 prefixed *",    // 3
		"User:bob DENY READ topic:orders literal *",          // 4
		"User:* ALLOW READ group:orders literal *",           // 5
		"Broker:1 ALLOW ALL cluster:kafka-cluster literal *", // 6
		"User:alice ALLOW READ topic:or prefixed *",          // 7
	)
	tests := []struct {
		filter string
		want   []int
	}{
		{"- - - -:- -", []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{"- ANY ANY any:- any", []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{"- - - topic:- -", []int{0, 1, 2, 3, 4, 7}},
		{"- - - group:- -", []int{5}},
		{"- - - cluster:- -", []int{6}},
		{"- - - cluster:kafka-cluster -", []int{6}},
		{"- - - -:orders -", []int{0, 4, 5}},
		{"- - - -:orders any", []int{0, 4, 5}},
		{"- - - -:orders literal", []int{0, 4, 5}},
		{"- - - topic:orders literal", []int{0, 4}},
		{"- - - -:ord prefixed", []int{2}},
		{"- - - -:ord literal", nil},
		{"- - - -:* literal", []int{1}},
		{"- - - topic:orders match", []int{0, 1, 2, 4, 7}},
		{"- - - topic:orders2 match", []int{1, 2, 3, 7}},
		{"- - - -:orders match", []int{0, 1, 2, 4, 5, 7}},
		{"- - - topic:o match", []int{1}},
		{"- - - topic:- match", []int{0, 1, 2, 3, 4, 7}},
		{"User:alice - - -:- -", []int{0, 1, 2, 3, 7}},
		{"User:* - - -:- -", []int{5}},
		{"- DENY - -:- -", []int{4}},
		{"- ALLOW - -:- -", []int{0, 1, 2, 3, 5, 6, 7}},
		{"- - READ -:- -", []int{0, 1, 4, 5, 7}},
		{"- - ALL -:- -", []int{6}},
		{"- - CLUSTER_ACTION -:- -", nil},
		{"- - - -:- - *", []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{"User:alice ALLOW WRITE topic:order match", []int{2}},
	}
	for _, tt := range tests {
		f := acl(tt.filter)
		var got []int
		for i, b := range bindings {
			if Matches(f, b) {
				got = append(got, i)
			}
		}
		if !equalInts(got, tt.want) {
			t.Errorf("filter %s matches %v, want %v", tt.filter, got, tt.want)
		}
		// A normalised filter selects the same bindings.
		if n, err := ValidateFilter(f); err != nil {
			t.Errorf("ValidateFilter(%s): %v", tt.filter, err)
		} else {
			for i, b := range bindings {
				if Matches(n, b) != Matches(f, b) {
					t.Errorf("filter %s: normalised form disagrees on binding %d", tt.filter, i)
				}
			}
		}
	}
}

// Stored bindings that were written before normalisation (host "", cluster
// name "") still match filters on the normalised values.
func TestMatchesUnnormalisedBinding(t *testing.T) {
	b := acl("User:a ALLOW ALTER cluster:- literal")
	for _, f := range []string{"- - - cluster:kafka-cluster -", "- - - -:- - *", "- - - cluster:kafka-cluster match"} {
		if !Matches(acl(f), b) {
			t.Errorf("filter %s does not match %s", f, String(b))
		}
	}
	if Matches(nil, nil) {
		t.Error("a nil binding matched")
	}
	if !Matches(nil, b) {
		t.Error("a nil filter should match every binding")
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
