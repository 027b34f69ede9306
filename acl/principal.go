package acl

import (
	"fmt"
	"strings"
)

// wildcardName as a principal's name ("User:*") stands for every principal
// of that type.
const wildcardName = "*"

// principalTypes are the principal types a binding may name: users
// (certificates and tokens) and brokers.
var principalTypes = map[string]bool{"User": true, "Broker": true}

// splitPrincipal splits "Type:name" at the first colon.
func splitPrincipal(p string) (typ, name string, ok bool) {
	return strings.Cut(p, ":")
}

// principalType is the type part of p, or "" when p has none.
func principalType(p string) string {
	typ, _, ok := splitPrincipal(p)
	if !ok {
		return ""
	}
	return typ
}

func validatePrincipal(p string) error {
	typ, name, ok := splitPrincipal(p)
	switch {
	case p == "":
		return fmt.Errorf("principal is empty; want Type:name such as User:alice")
	case !ok:
		return fmt.Errorf("principal %q has no type; want Type:name such as User:alice", p)
	case !principalTypes[typ]:
		return fmt.Errorf("principal %q has type %q; the type must be User or Broker", p, typ)
	case name == "":
		return fmt.Errorf("principal %q has an empty name; want Type:name such as User:alice", p)
	}
	return nil
}
