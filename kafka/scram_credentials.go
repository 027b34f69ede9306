package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/acl"
	"github.com/sluicemq/sluice/messages"
)

// DescribeUserScramCredentials (key 50) and AlterUserScramCredentials
// (key 51), v0: users' passwords as Kafka's tools manage them. A describe
// shows only mechanisms and iterations; an alter carries salted passwords,
// from which this listener derives the keys the cluster stores (the
// salted password goes no further). Both need a broker with TLS, Describe
// or Alter on the cluster.

func handleDescribeUserSCRAMCredentials(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	answer := r.ask(&messages.ListUsersRequest{})
	return func() kmsg.Response {
		resp := kmsg.NewPtrDescribeUserSCRAMCredentialsResponse()
		m, code, text := answerWithError[*messages.ListUsersResponse](answer)
		if code != 0 {
			resp.ErrorCode, resp.ErrorMessage = code, text
			return resp
		}
		creds := map[string][]kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{}
		var all []string
		for _, u := range m.Users {
			for _, c := range u.Scram {
				info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				info.Mechanism, info.Iterations = int8(c.Mechanism), c.Iterations
				creds[u.Name] = append(creds[u.Name], info)
			}
			if len(u.Scram) > 0 {
				all = append(all, u.Name)
			}
		}
		if len(req.Users) == 0 {
			// No users named: every user with a password.
			for _, name := range all {
				res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
				res.User, res.CredentialInfos = name, creds[name]
				resp.Results = append(resp.Results, res)
			}
			return resp
		}
		named := map[string]int{}
		for _, u := range req.Users {
			named[u.Name]++
		}
		for _, u := range req.Users {
			if named[u.Name] < 0 {
				continue // answered already
			}
			res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
			res.User = u.Name
			switch {
			case named[u.Name] > 1:
				res.ErrorCode = int16(messages.ErrorCode_DUPLICATE_RESOURCE)
				res.ErrorMessage = kmsg.StringPtr("the user is named more than once")
			case len(creds[u.Name]) == 0:
				res.ErrorCode = int16(messages.ErrorCode_RESOURCE_NOT_FOUND)
				res.ErrorMessage = kmsg.StringPtr("the user has no password")
			default:
				res.CredentialInfos = creds[u.Name]
			}
			named[u.Name] = -1
			resp.Results = append(resp.Results, res)
		}
		return resp
	}
}

func handleAlterUserSCRAMCredentials(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.AlterUserSCRAMCredentialsRequest)
	alter := &messages.AlterScramCredentialsRequest{}
	for _, u := range req.Upsertions {
		alter.Upsertions = append(alter.Upsertions, &messages.ScramUpsertion{Name: u.Name,
			Credential: acl.ScramCredentialOf(int32(u.Mechanism), u.Iterations, u.Salt, u.SaltedPassword)})
	}
	for _, d := range req.Deletions {
		alter.Deletions = append(alter.Deletions, &messages.ScramDeletion{Name: d.Name, Mechanism: int32(d.Mechanism)})
	}
	answer := r.ask(alter)
	return func() kmsg.Response {
		resp := kmsg.NewPtrAlterUserSCRAMCredentialsResponse()
		m, code, text := answerWithError[*messages.AlterScramCredentialsResponse](answer)
		if code != 0 {
			// The whole request failed: every user named says so.
			seen := map[string]bool{}
			for _, u := range alter.Upsertions {
				resp.Results = appendUserResult(resp.Results, seen, u.Name, code, text)
			}
			for _, d := range alter.Deletions {
				resp.Results = appendUserResult(resp.Results, seen, d.Name, code, text)
			}
			return resp
		}
		seen := map[string]bool{}
		for _, res := range m.Results {
			var text *string
			if res.ErrorMessage != "" {
				text = kmsg.StringPtr(res.ErrorMessage)
			}
			resp.Results = appendUserResult(resp.Results, seen, res.Name, kafkaCode(res.Error), text)
		}
		return resp
	}
}

// appendUserResult adds one user's result, once per user.
func appendUserResult(out []kmsg.AlterUserSCRAMCredentialsResponseResult, seen map[string]bool, user string, code int16, text *string) []kmsg.AlterUserSCRAMCredentialsResponseResult {
	if seen[user] {
		return out
	}
	seen[user] = true
	res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
	res.User, res.ErrorCode, res.ErrorMessage = user, code, text
	return append(out, res)
}
