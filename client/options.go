package client

// Options, one kind per kind of client (as franz-go's ProducerOpt,
// ConsumerOpt, GroupOpt): an option a client does not use is refused by
// the compiler, not ignored. Options every client uses are of type Opt,
// which every kind accepts; a few fit two or three kinds (FetchOpt,
// ResetOpt, MemberOpt).

// ProducerOpt configures a Producer (NewProducer).
type ProducerOpt interface {
	apply(*config)
	isProducerOpt()
}

// ConsumerOpt configures a Consumer of chosen partitions (NewConsumer).
type ConsumerOpt interface {
	apply(*config)
	isConsumerOpt()
}

// GroupOpt configures a GroupConsumer (NewGroupConsumer).
type GroupOpt interface {
	apply(*config)
	isGroupOpt()
}

// SubscribeOpt configures a push subscription (Subscribe).
type SubscribeOpt interface {
	apply(*config)
	isSubscribeOpt()
}

// AdminOpt configures an Admin (NewAdmin).
type AdminOpt interface {
	apply(*config)
	isAdminOpt()
}

// Opt is an option of every client (System takes only these): where the
// client listens, how it authenticates, request timeouts, metadata age,
// logging.
type Opt interface {
	AdminOpt
	ProducerOpt
	ConsumerOpt
	GroupOpt
	SubscribeOpt
}

// FetchOpt configures fetching, by a Consumer or a GroupConsumer.
type FetchOpt interface {
	ConsumerOpt
	GroupOpt
}

// ResetOpt configures where consumption starts without a position: for a
// Consumer, a GroupConsumer or a push subscription.
type ResetOpt interface {
	ConsumerOpt
	GroupOpt
	SubscribeOpt
}

// MemberOpt configures a group member, polled or pushed to.
type MemberOpt interface {
	GroupOpt
	SubscribeOpt
}

// Options combines several options of every client into one.
func Options(opts ...Opt) Opt {
	return anyOpt(func(c *config) {
		for _, o := range opts {
			o.apply(c)
		}
	})
}

// configOf is the default configuration with opts applied in order.
func configOf[O interface{ apply(*config) }](opts []O) config {
	cfg := defaultConfig()
	for _, o := range opts {
		o.apply(&cfg)
	}
	return cfg
}

// The option types behind the interfaces: what each applies to is what
// its methods say.
type (
	anyOpt       func(*config)
	producerOpt  func(*config)
	consumerOpt  func(*config)
	fetchOpt     func(*config)
	resetOpt     func(*config)
	groupOpt     func(*config)
	memberOpt    func(*config)
	subscribeOpt func(*config)
	adminOpt     func(*config)
)

func (o anyOpt) apply(c *config) { o(c) }
func (anyOpt) isProducerOpt()    {}
func (anyOpt) isConsumerOpt()    {}
func (anyOpt) isGroupOpt()       {}
func (anyOpt) isSubscribeOpt()   {}
func (anyOpt) isAdminOpt()       {}

func (o producerOpt) apply(c *config) { o(c) }
func (producerOpt) isProducerOpt()    {}

func (o consumerOpt) apply(c *config) { o(c) }
func (consumerOpt) isConsumerOpt()    {}

func (o fetchOpt) apply(c *config) { o(c) }
func (fetchOpt) isConsumerOpt()    {}
func (fetchOpt) isGroupOpt()       {}

func (o resetOpt) apply(c *config) { o(c) }
func (resetOpt) isConsumerOpt()    {}
func (resetOpt) isGroupOpt()       {}
func (resetOpt) isSubscribeOpt()   {}

func (o groupOpt) apply(c *config) { o(c) }
func (groupOpt) isGroupOpt()       {}

func (o memberOpt) apply(c *config) { o(c) }
func (memberOpt) isGroupOpt()       {}
func (memberOpt) isSubscribeOpt()   {}

func (o subscribeOpt) apply(c *config) { o(c) }
func (subscribeOpt) isSubscribeOpt()   {}

func (o adminOpt) apply(c *config) { o(c) }
func (adminOpt) isAdminOpt()       {}
