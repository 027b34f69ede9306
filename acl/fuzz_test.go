package acl

import (
	"slices"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/messages"
)

// Small pools, mostly of valid values, so that random bindings and
// questions often meet; the odd invalid value checks that such bindings
// are ignored and such questions denied.
var (
	fuzzBindingPrincipals = []string{"User:alice", "User:bob", "User:*", "Broker:1", "Broker:*", "alice"}
	fuzzAskingPrincipals  = []string{"User:alice", "User:bob", "Broker:1", "Broker:2", "alice", ""}
	fuzzNames             = []string{"a", "ab", "abc", "b", "*", "", ClusterName}
	fuzzHosts             = []string{"*", "*", "*", "", "10.0.0.1"}
	fuzzResources         = []messages.AclResourceType{resourceTopic, resourceTopic, resourceGroup, resourceCluster, resourceAny}
	fuzzPatterns          = []messages.AclPatternType{patternLiteral, patternPrefixed, patternLiteral, patternMatch}
	fuzzPermissions       = []messages.AclPermission{permissionAllow, permissionAllow, permissionDeny}
	fuzzOperations        = []messages.AclOperation{opRead, opWrite, opDescribe, opAll, opDelete, opAlter, opCreate,
		opAlterConfigs, opDescribeConfigs, opClusterAction, opIdempotentWrite, operationAny, 0, 13}
)

// fuzzBytes hands out the fuzz input one choice at a time (zeros when used up).
type fuzzBytes []byte

func (b *fuzzBytes) next(n int) int {
	if len(*b) == 0 {
		return 0
	}
	v := int((*b)[0])
	*b = (*b)[1:]
	return v % n
}

func pick[T any](b *fuzzBytes, from []T) T { return from[b.next(len(from))] }

// question is one Authorize call.
type question struct {
	principal string
	op        messages.AclOperation
	rt        messages.AclResourceType
	name      string
}

func (q question) ask(a *Authorizer) bool { return a.Authorize(q.principal, q.op, q.rt, q.name) }

// fuzzBinding draws a binding; most are then made valid, since invalid
// ones are ignored and so test little.
func fuzzBinding(b *fuzzBytes) *messages.AclBinding {
	d := &messages.AclBinding{
		Principal:    pick(b, fuzzBindingPrincipals),
		Permission:   pick(b, fuzzPermissions),
		Operation:    pick(b, fuzzOperations),
		ResourceType: pick(b, fuzzResources),
		ResourceName: pick(b, fuzzNames),
		PatternType:  pick(b, fuzzPatterns),
		Host:         pick(b, fuzzHosts),
	}
	if b.next(8) == 0 {
		return d
	}
	if _, ok := operationsOf[d.ResourceType]; !ok {
		d.ResourceType = resourceTopic
	}
	if ops := operationsOf[d.ResourceType]; !validOperationFor(d.ResourceType, d.Operation) {
		d.Operation = ops[b.next(len(ops))]
	}
	if d.ResourceType == resourceCluster {
		d.PatternType, d.ResourceName = patternLiteral, ClusterName
	}
	if d.PatternType != patternLiteral && d.PatternType != patternPrefixed {
		d.PatternType = patternPrefixed
	}
	if d.ResourceName == "" {
		d.ResourceName = "a"
	}
	if validatePrincipal(d.Principal) != nil {
		d.Principal = "User:bob"
	}
	d.Host = "*"
	return d
}

// fuzzQuestion draws a question, each field either random or taken from
// one of the bindings, so that questions often meet bindings.
func fuzzQuestion(b *fuzzBytes, bindings []*messages.AclBinding) question {
	q := question{
		principal: pick(b, fuzzAskingPrincipals),
		op:        pick(b, fuzzOperations),
		rt:        pick(b, fuzzResources),
		name:      pick(b, fuzzNames),
	}
	if len(bindings) == 0 {
		return q
	}
	near := pick(b, bindings)
	keep := b.next(16) | b.next(16) // most fields from the binding
	if keep&1 != 0 {
		q.principal = strings.Replace(near.Principal, ":*", ":2", 1)
	}
	if keep&2 != 0 {
		q.op = near.Operation
	}
	if keep&4 != 0 {
		q.rt = near.ResourceType
	}
	if keep&8 != 0 {
		q.name = near.ResourceName
		if near.PatternType == patternPrefixed {
			q.name += pick(b, fuzzNames)
		}
	}
	return q
}

// matchingDeny builds a valid DENY binding that applies to q, or nil when
// no valid binding can (q asks about no real resource, operation or
// principal).
func matchingDeny(b *fuzzBytes, q question) *messages.AclBinding {
	if _, ok := operationsOf[q.rt]; !ok || !askable(q.op) || validatePrincipal(q.principal) != nil {
		return nil
	}
	d := &messages.AclBinding{ResourceType: q.rt, Principal: q.principal, Host: "*",
		Operation: q.op, Permission: permissionDeny, PatternType: patternLiteral, ResourceName: resourceName(q.rt, q.name)}
	if b.next(2) == 0 || !validOperationFor(q.rt, q.op) {
		d.Operation = opAll
	}
	if b.next(2) == 0 {
		d.Principal = principalType(q.principal) + ":*"
	}
	if q.rt != resourceCluster {
		switch b.next(3) {
		case 1:
			d.ResourceName = wildcardResource
		case 2:
			if len(q.name) > 0 {
				d.PatternType = patternPrefixed
				d.ResourceName = q.name[:1+b.next(len(q.name))]
			}
		}
	}
	if d.ResourceName == "" || q.rt == resourceCluster && d.ResourceName != ClusterName {
		return nil // only the cluster "kafka-cluster" and non-empty names can be bound
	}
	if _, err := Validate(d); err != nil {
		panic("matchingDeny built an invalid binding: " + err.Error())
	}
	return d
}

// reference is Authorize written as plainly as possible: a scan of every
// binding, for comparison with the indexed Authorizer.
func reference(bindings []*messages.AclBinding, q question) bool {
	if q.op < opAll || q.op > opIdempotentWrite {
		return false
	}
	name := q.name
	if q.rt == resourceCluster && name == "" {
		name = ClusterName
	}
	implies := map[messages.AclOperation][]messages.AclOperation{
		opDescribe:        {opRead, opWrite, opDelete, opAlter},
		opDescribeConfigs: {opAlterConfigs},
	}
	allowed := false
	for _, raw := range bindings {
		b, err := Validate(raw)
		if err != nil || b.ResourceType != q.rt {
			continue
		}
		typ, who, _ := strings.Cut(b.Principal, ":")
		if b.Principal != q.principal && !(who == "*" && strings.HasPrefix(q.principal, typ+":")) {
			continue
		}
		if b.PatternType == patternLiteral && b.ResourceName != name && b.ResourceName != "*" ||
			b.PatternType == patternPrefixed && !strings.HasPrefix(name, b.ResourceName) {
			continue
		}
		exact := b.Operation == q.op || b.Operation == opAll
		if b.Permission == permissionDeny && exact {
			return false
		}
		if b.Permission == permissionAllow && (exact || slices.Contains(implies[q.op], b.Operation)) {
			allowed = true
		}
	}
	return allowed
}

func FuzzAuthorize(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0, 3, 1, 0, 1, 0, 0, 3, 1, 0, 0})
	f.Add([]byte{3, 2, 0, 8, 1, 2, 0, 0, 0, 1, 0, 3, 1, 0, 2, 1, 8, 0, 0, 2, 1, 2, 0, 0, 0, 1, 2})
	f.Add([]byte{2, 0, 0, 2, 3, 7, 0, 0, 5, 1, 4, 2, 1, 0, 1, 0, 9, 3, 7, 1, 1, 2})
	f.Add([]byte{0, 0, 3, 3, 3}) // ALL on the cluster "b": no binding can name it
	f.Add([]byte("alice may read orders but bob may not describe them"))
	f.Add([]byte{5, 1, 1, 6, 1, 4, 1, 0, 4, 1, 11, 1, 2, 1, 0, 2, 0, 10, 0, 3, 1, 0, 0, 0, 2, 0, 1, 3, 0, 1, 0, 8, 1, 2, 2, 1, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzBytes(data)
		bindings := make([]*messages.AclBinding, in.next(24))
		for i := range bindings {
			bindings[i] = fuzzBinding(&in)
		}
		q := fuzzQuestion(&in, bindings)
		a := New(bindings, []string{"User:root"})
		got := q.ask(a)

		if want := reference(bindings, q); got != want {
			t.Fatalf("Authorize(%v) = %v, reference says %v; bindings:\n%s", q, got, want, dump(bindings))
		}
		if why := a.Why(q.principal, q.op, q.rt, q.name); (why == "") != got {
			t.Fatalf("Why(%v) = %q but Authorize = %v", q, why, got)
		}
		reversed := slices.Clone(bindings)
		slices.Reverse(reversed)
		if q.ask(New(reversed, nil)) != got {
			t.Fatalf("Authorize(%v) depends on binding order; bindings:\n%s", q, dump(bindings))
		}
		if !q.ask(New(bindings, []string{q.principal})) {
			t.Fatalf("super user %q denied %v", q.principal, q)
		}

		// Deny wins: a DENY that applies to q always says no ...
		if d := matchingDeny(&in, q); d != nil {
			withDeny := New(append(slices.Clone(bindings), d), nil)
			if q.ask(withDeny) {
				t.Fatalf("Authorize(%v) still yes after adding %s; bindings:\n%s", q, String(d), dump(bindings))
			}
			if why := withDeny.Why(q.principal, q.op, q.rt, q.name); !strings.HasPrefix(why, "denied by ACL ") {
				t.Fatalf("Why(%v) = %q after adding %s", q, why, String(d))
			}
		}
		// ... and no DENY, valid or not, turns a no into a yes.
		d := fuzzBinding(&in)
		d.Permission = permissionDeny
		if !got && q.ask(New(append(slices.Clone(bindings), d), nil)) {
			t.Fatalf("adding %s turned Authorize(%v) from no to yes", String(d), q)
		}
		// An ALLOW never turns a yes into a no.
		d.Permission = permissionAllow
		if got && !q.ask(New(append(slices.Clone(bindings), d), nil)) {
			t.Fatalf("adding %s turned Authorize(%v) from yes to no", String(d), q)
		}
	})
}

func dump(bindings []*messages.AclBinding) string {
	var sb strings.Builder
	for _, b := range bindings {
		sb.WriteString("  " + String(b) + "\n")
	}
	return sb.String()
}
