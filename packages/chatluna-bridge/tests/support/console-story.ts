// What the person asks ChatLuna in the console's chat sandbox, and what the child answers (fixtures/console-app.ts
// scripts the loopback model with it; scripts/screenshot-chatluna.ts types the question and waits for the answer).
export const QUESTION = 'Which three steps does the release of 1.2 take? Have a helper list them.'
export const CHILD_PROMPT = 'CHILD: list the three steps of the release of 1.2'
export const CHILD_ANSWER = '1. tag v1.2, 2. build the packages, 3. publish them'
export const REPLY_PREFIX = 'A subagent on this ChatLuna model answered:'
