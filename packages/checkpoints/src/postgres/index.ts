import { PostgresDriver } from './driver.js'

export { PostgresDriver }
export { PostgresBuilder, quoteId } from './builder.js'
export default PostgresDriver
