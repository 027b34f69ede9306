package transport

import "github.com/asynkron/protoactor-go/actor"

// Actor names. A broker's actors are reachable at its address under these ids.
const (
	// BrokerActorName is the actor every client request is sent to.
	BrokerActorName = "broker"
	// ControllerActorName is the controller, present on one broker at a time.
	ControllerActorName = BrokerActorName + "/controller"
)

// BrokerPID is the broker actor of the broker at addr.
func BrokerPID(addr string) *actor.PID { return actor.NewPID(addr, BrokerActorName) }

// ControllerPID is the controller actor on the broker at addr.
func ControllerPID(addr string) *actor.PID { return actor.NewPID(addr, ControllerActorName) }
