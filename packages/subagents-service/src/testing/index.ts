// The provider author kit: `@cordis-subagents/subagents-service/testing`.
export {
  describeProviderContract, type ProviderContractOptions, type ProviderContractSubject, type ProviderSteeringSubject,
} from './contract.js'
export { ALL_CAPABILITIES, FakeProvider, FakeRun, NO_CAPABILITIES } from './fake-provider.js'
