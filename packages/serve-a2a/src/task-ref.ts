/** Where a task is filed: tenant, credential scope, id (the primary key). */
export interface TaskRef {
  tenant: string
  scope: string
  id: string
}
