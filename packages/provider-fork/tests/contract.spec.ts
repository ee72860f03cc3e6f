import { describeProviderContract } from '@cordis-subagents/subagents-service/testing'
import { inProcessSubject } from '../../provider-spawn/tests/contract-subject.js'

describeProviderContract('fork (createInProcessProvider, inheriting the parent\'s turns)', () => inProcessSubject(true), { steering: true })
