// What the page knows: what the daemon told us (status, tells, approvals, ...), updated
// by the loaders and the live events (api.js) and read by every view.

export const FINAL = new Set(["completed", "timed_out", "interrupted", "failed"]);
export const STATUSES = ["queued", "running", "awaiting_approval", "completed", "timed_out", "interrupted", "failed"];
export const TELL_LIMIT = 200;

export const state = {
  status: null, // StatusReply
  tells: new Map(), // id -> TellInfo
  approvals: new Map(), // id -> ApprovalInfo (pending ones)
  decided: [], // recently decided approvals
  questions: new Map(), // id -> QuestionInfo (pending ones)
  closedQuestions: [], // recently answered, dismissed or expired questions
  // The conversation with iris-agent: its one session for the person, shared with 'iris ask'
  // ("New conversation" starts another).
  ask: { turns: [], thinking: false, session: "", fresh: false },
  costs: { by: "team", since: "all", reply: null, loading: false, error: "" }, // the Costs view
  rules: null, // remembered rules, when the daemon offers them
  notifications: [],
  connected: false,
  everConnected: false,
  loggedOut: false,
  filter: { team: "", status: "" },
  open: null, // { id, tell, steps, text, loading }
  notices: new Map(), // tell id -> [notice text]
  touched: new Set(), // ids of tells events changed since the last listing
};

// The daemon leaves out fields that hold their default value: put them back.
export function tellInfo(t) {
  return { text: "", error: "", session_id: "", kind: "tell", hops: 0, chain_id: "", approval_id: "", cost_usd: null, started_at: null, finished_at: null, ...t };
}

// The claude processes running now, as 'iris status' counts them: a pair of an A2A agent
// or of a team on another irisd (p.kind) has no claude here, whatever its state.
export function claudeRunning(processes) {
  return processes.filter((p) => !p.kind && p.pid !== undefined && p.pid !== null).length;
}
