import { describeProviderContract } from '@cordis-subagents/subagents-service/testing'
import { inProcessSubject } from './contract-subject.js'

describeProviderContract('spawn (createInProcessProvider)', () => inProcessSubject(false), { steering: true })
